"""What the adapters over the official OpenAI and Anthropic SDKs share.

The SDK client cache (a few clients per event loop, key and base URL, each call taking the least
busy) and its retry setting, the race of a model call's awaits against the run's abort signal, the
text of a provider's error body, and the translation of runtime message parts (JSON text, tool
arguments, media sources).
Nothing here imports an SDK.
"""

from __future__ import annotations

import asyncio
import base64
import json
import urllib.parse
import weakref
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Awaitable, Callable, TypeVar

from ..errors import ModelError

if TYPE_CHECKING:  # pragma: no cover
    from .base import ModelRequest

T = TypeVar("T")

#: Statuses the SDKs themselves retry; a ModelError with one of them is marked retryable.
RETRYABLE_STATUSES = frozenset({408, 409, 429})
DEFAULT_MAX_RETRIES = 2

def json_text(value: Any) -> str:
    """``value`` as text for a model: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def args_text(args: Any) -> str:
    """Tool-call arguments as a JSON object text (a string is taken to be JSON already)."""
    if args is None:
        return "{}"
    if isinstance(args, str):
        return args or "{}"
    return json.dumps(args, ensure_ascii=False, default=str)


def args_object(args: Any) -> Any:
    """Tool-call arguments as a decoded value (Anthropic wants ``input`` as an object)."""
    if args is None or args == "":
        return {}
    if isinstance(args, str):
        try:
            return json.loads(args)
        except ValueError:
            # Echo back what the model sent rather than failing the whole request.
            return {"_raw": args}
    return args


def media_of(part: dict) -> tuple[str, str | None, str]:
    """The source of an image/file part as ``("url", mime, url)`` or ``("base64", mime, data)``.

    Accepts ``image``/``data``/``url`` holding bytes, an ``http(s)`` URL, a ``data:`` URL or a
    base64 string. The MIME type is ``mediaType`` (the AI SDK's name, used by signal parts),
    ``mimeType`` or, for data URLs, the one the URL names.
    """
    data = part.get("image", part.get("data", part.get("url")))
    mime = part.get("mediaType") or part.get("mimeType")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return "base64", mime, base64.b64encode(bytes(data)).decode("ascii")
    if not isinstance(data, str):
        raise ModelError(f"unsupported {part.get('type', 'media')} data of type {type(data).__name__}; "
                         "use bytes, a URL or a base64 string", code="unsupported_content")
    if data.startswith("data:"):
        header, _, payload = data[5:].partition(",")
        fields = header.split(";")
        mime = fields[0] or mime
        if "base64" in fields[1:]:
            return "base64", mime, payload
        raw = urllib.parse.unquote_to_bytes(payload)
        return "base64", mime, base64.b64encode(raw).decode("ascii")
    if data.startswith(("http://", "https://")):
        return "url", mime, data
    return "base64", mime, data


def timed_out(exc: BaseException) -> bool:
    """Whether the SDK's timeout error ``exc`` comes from a timeout. The aiohttp transport names
    every failed connection (refused, dropped) a connect timeout; the first cause it chained says
    what happened."""
    cause, seen = exc, set()
    while (cause.__cause__ or cause.__context__) is not None and id(cause) not in seen:
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return isinstance(cause, TimeoutError) or "Timeout" in type(cause).__name__


def server_message(body: Any) -> str | None:
    """The human message of a provider error body (``{"error": {"message"}}`` and variants)."""
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict):
            message = inner.get("message")
            if isinstance(message, str) and message:
                return message
        elif isinstance(inner, str) and inner:
            return inner
        message = body.get("message")
        if isinstance(message, str) and message:
            return message
    elif isinstance(body, str) and body:
        return body
    return None


def retry_after_seconds(headers: Any, now: float | None = None) -> float | None:
    """The wait a provider asks for in its response headers, in seconds: ``retry-after-ms``
    (milliseconds, OpenAI's and Anthropic's), else ``retry-after`` (seconds or an HTTP date).
    None when neither is there or readable; never negative."""
    if headers is None:
        return None
    get = getattr(headers, "get", None)
    if get is None:
        return None
    raw_ms = get("retry-after-ms")
    if raw_ms is not None:
        try:
            value = float(raw_ms)
        except (TypeError, ValueError):
            value = None
        if value is not None and value == value and value >= 0:
            return value / 1000
    raw = get("retry-after")
    if raw is None:
        return None
    try:
        value = float(raw)
    except (TypeError, ValueError):
        from email.utils import parsedate_to_datetime

        try:
            moment = parsedate_to_datetime(str(raw))
        except (TypeError, ValueError, IndexError):
            return None
        if moment is None:
            return None
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        current = now if now is not None else datetime.now(timezone.utc).timestamp()
        return max(0.0, moment.timestamp() - current)
    return value if value == value and value >= 0 else None


def iso_timestamp(seconds: float | None = None) -> str:
    """Unix seconds (or now) as an ISO-8601 UTC string."""
    moment = datetime.fromtimestamp(seconds, timezone.utc) if seconds else datetime.now(timezone.utc)
    return moment.isoformat()


class Aborted(Exception):
    """Internal: the request's abort signal fired while an await was pending."""


class AbortWatch:
    """Races the awaits of one model call against ``request.abort_signal``.

    ``run(awaitable)`` returns the awaitable's result, or raises :class:`Aborted` as soon as the
    signal fires, so a stalled server cannot hold an aborted run: while ``run`` awaits, a listener
    on the signal cancels the awaiting task, whose cancellation is then taken back
    (``Task.uncancel``) and raised as :class:`Aborted`. The awaitable runs in the caller's task,
    as a plain ``await``: no task and no ``asyncio.wait`` per chunk of the stream (with 500 streams
    in flight they made a third of the event loop's callbacks, ``bench/concurrency.py``). A
    cancellation from elsewhere (the run's task cancelled at shutdown) stays a ``CancelledError``.
    """

    def __init__(self, signal: Any) -> None:
        self.signal = signal
        #: the task awaiting inside run(), cancelled if the signal fires meanwhile
        self._task: asyncio.Task | None = None
        self._cancelled = False
        self._remove: Callable[[], None] | None = None

    @property
    def aborted(self) -> bool:
        return bool(self.signal is not None and getattr(self.signal, "aborted", False))

    def _on_abort(self, reason: Any) -> None:
        if self._task is not None and not self._cancelled:
            self._cancelled = True
            self._task.cancel()

    async def run(self, awaitable: Awaitable[T]) -> T:
        if self.signal is None:
            return await awaitable
        if self.aborted:
            if asyncio.iscoroutine(awaitable):
                awaitable.close()  # never started: close it to avoid "never awaited" warnings
            raise Aborted()
        if self._remove is None:
            self._remove = self.signal.add_listener(self._on_abort)
        task = self._task = asyncio.current_task()
        try:
            return await awaitable
        except asyncio.CancelledError:
            if self._cancelled:
                self._cancelled = False
                if task.uncancel() == 0:  # ours alone: the run sees an abort
                    raise Aborted() from None
            raise
        finally:
            self._task = None
            if self._cancelled:  # the awaitable swallowed our cancellation (a shielded close): take it back
                self._cancelled = False
                task.uncancel()

    async def next_object(self, stream: Any, what: str) -> dict | None:
        """The next item of an SDK stream of parsed JSON (``AsyncStream[object]``), read through
        :meth:`run`; None at its end. An item that is not a JSON object raises ``ValueError`` (a
        malformed stream), naming it as ``what``."""
        try:
            item = await self.run(stream.__anext__())
        except StopAsyncIteration:
            return None
        if not isinstance(item, dict):
            raise ValueError(f"{what} is not a JSON object: {str(item)[:200]}")
        return item

    def close(self) -> None:
        if self._remove is not None:
            self._remove()
            self._remove = None


def resolve_max_retries(settings: dict) -> int:
    value = settings.get("max_retries")
    if value is None:
        return DEFAULT_MAX_RETRIES
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ModelError(f"max_retries must be a non-negative integer, not {value!r}", code="invalid_settings")
    return value


#: the SDK clients to close when their event loop ends, by loop
_loop_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, set]" = weakref.WeakKeyDictionary()


def close_with_loop(client: T) -> T:
    """Return ``client`` (an SDK client), closed when the running event loop ends.

    ``asyncio.run`` (and so ``async_to_sync`` in a Celery task) and ``asyncio.Runner`` cancel
    every task left before they close their loop: one task per loop waits for that cancellation
    and closes the loop's clients (aiohttp reports a session dropped unclosed as an error). A server
    whose loop outlives its requests closes them at its shutdown (:func:`close_loop_clients`).
    """
    loop = asyncio.get_running_loop()
    clients = _loop_clients.get(loop)
    if clients is None:
        clients = _loop_clients[loop] = set()
        closer = loop.create_task(_close_at_loop_end(clients), name="mastra-sdk-clients")
        _closers.add(closer)  # the loop keeps only a weak reference to its tasks
        closer.add_done_callback(_closers.discard)
    clients.add(client)
    return client


#: the tasks that close SDK clients (:func:`close_with_loop`'s, one per event loop, and :func:`_close_now`'s)
_closers: set[asyncio.Task] = set()


async def _close_at_loop_end(clients: set) -> None:
    try:
        await asyncio.get_running_loop().create_future()  # never set: ends cancelled
    finally:
        _loop_clients.pop(asyncio.get_running_loop(), None)
        await _close_all(clients)


async def _close_all(clients: set) -> None:
    while clients:
        try:
            await clients.pop().close()
        except Exception:  # noqa: BLE001 - a client that fails to close is dropped all the same
            pass


def _close_now(loop: asyncio.AbstractEventLoop, clients: list) -> None:
    """Close ``clients`` of ``loop`` (the running one) in a task, no longer waiting for its end."""
    kept = _loop_clients.get(loop, set())
    kept.difference_update(clients)
    closer = loop.create_task(_close_all(set(clients)))
    _closers.add(closer)
    closer.add_done_callback(_closers.discard)


async def close_loop_clients() -> None:
    """Close the SDK clients built on the running event loop (a server's shutdown); a later model
    call builds new ones."""
    await _close_all(_loop_clients.get(asyncio.get_running_loop(), set()))


class SDKClientCache:
    """Caches the SDK clients of each (event loop, key, base URL): a connection pool cannot move
    between event loops. Subclasses define ``resolve_api_key()``, ``base_url`` and
    ``_new_client(key, url)``.

    The clients send through aiohttp (the SDKs' ``DefaultAioHttpClient``): its connection pool
    takes a connection in constant time, where httpcore's (the SDKs' default) probes every idle
    connection each time a request starts or ends, which made a model call cost twice the CPU with
    hundreds of streams in flight (``bench/concurrency.py``). Each client is closed when its event
    loop ends (:func:`close_with_loop`), or by :meth:`aclose`.

    A call takes one of up to :attr:`pools` clients (one by default): the one with the fewest calls
    in flight, the first on a tie, and a new one only when every client has :attr:`pool_spread`
    calls in flight.
    """

    #: (loop, key, url, [[client, calls in flight, {(max_retries, timeout): client with them}], ...])
    _client_state: tuple[Any, ...] | None = None
    #: seconds an HTTP request (a connection, a read of the stream) may take; None: the SDK's default
    timeout: float | None = None
    #: SDK clients (connection pools) at most per event loop, key and base URL
    pools: int = 1
    #: calls in flight on every client before another client is built
    pool_spread: int = 32

    def validate_credentials(self) -> None:
        """Raise :class:`MissingCredentialsError` now if a call would lack a key."""
        self.resolve_api_key()

    def _pools(self) -> list[list]:
        """The ``[client, calls in flight, option copies]`` of this event loop, key and base URL
        (the list is built anew, with one client, when any of them changed)."""
        key, url = self.resolve_api_key(), self.base_url
        loop = asyncio.get_running_loop()
        state = self._client_state
        if state is not None and state[0] is loop and state[1] == key and state[2] == url:
            return state[3]
        if state is not None and state[0] is loop:  # the key or URL changed: close the old clients
            _close_now(loop, [pool[0] for pool in state[3]])
        pools = [[self._loop_client(key, url), 0, {}]]
        self._client_state = (loop, key, url, pools)
        return pools

    def _loop_client(self, key: str, url: str | None) -> Any:
        """A new SDK client, closed when the running event loop ends."""
        return close_with_loop(self._new_client(key, url))

    def pool_load(self) -> list[int]:
        """The calls in flight on each SDK client of this event loop, key and base URL."""
        return [pool[1] for pool in self._pools()]

    def client(self) -> Any:
        """The first SDK client for this event loop, key and base URL (built once, then reused)."""
        return self._pools()[0][0]

    def preload(self) -> None:
        """Import now what this model's first call would import (the SDK, its HTTP client and the
        async backend its streams use: about 700 modules and 0.4 s for the ``openai`` SDK), by
        building a client on an event loop of its own and closing it. Nothing is sent and no key
        is read; the caller's event loop, if any, is left as it was. A web process does it before
        it freezes its heap (:mod:`agents.runtime.providers.preload`)."""
        async def build_and_close() -> None:
            client = self._new_client("preload", "http://127.0.0.1:9/v1")  # never contacted
            try:
                import anyio.lowlevel  # the SDKs' dependency: its asyncio backend loads on first use

                await anyio.lowlevel.checkpoint()
            finally:
                await client.close()

        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(build_and_close())
        finally:
            loop.close()

    def prepare_call(self, request: ModelRequest) -> tuple[Any, dict, list[str], Callable[[], None]]:
        """The SDK client for ``request`` (with its retry setting), the request body, the
        warnings about what the body could not carry, and ``release()``, to call once the call is
        over (it counts the client's calls in flight)."""
        pools = self._pools()
        pool = min(pools, key=lambda p: p[1])  # the first of the least busy
        if pool[1] >= self.pool_spread and len(pools) < self.pools:
            state = self._client_state
            pool = [self._loop_client(state[1], state[2]), 0, {}]
            pools.append(pool)
        pool[1] += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                pool[1] -= 1

        try:
            body, warnings = self.build_body(request)
            max_retries = (request.sdk_retries if request.sdk_retries is not None
                           else resolve_max_retries(request.settings or {}))
            # a client with other options is a copy sharing the connection pool, kept: a new copy
            # per call cost a client's construction and the SDK's platform probe on a thread
            client = pool[2].get((max_retries, self.timeout))
            if client is None:
                client = pool[0]
                changes: dict = {}
                if max_retries != client.max_retries:
                    changes["max_retries"] = max_retries
                if self.timeout is not None:
                    changes["timeout"] = self.timeout
                if changes:
                    client = client.with_options(**changes)
                pool[2][(max_retries, self.timeout)] = client
        except BaseException:
            release()
            raise
        return client, body, warnings, release

    async def aclose(self) -> None:
        """Close the cached SDK clients and their connection pools; the next call builds anew.

        Clients built on another (possibly closed) event loop cannot be closed from this one
        and are only dropped.
        """
        state, self._client_state = self._client_state, None
        if state is not None and state[0] is asyncio.get_running_loop():
            clients = [pool[0] for pool in state[3]]
            _loop_clients.get(state[0], set()).difference_update(clients)
            await _close_all(set(clients))
