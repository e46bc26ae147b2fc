"""Local HTTP servers that speak the providers' streaming wire formats, for adapter tests.

:class:`WireServer` runs a stdlib ``ThreadingHTTPServer`` on ``127.0.0.1`` (a free port) in a
background thread. Tests script its replies with :meth:`WireServer.reply` (the n-th request gets
the n-th reply; the last one repeats) and read back what the SDKs sent in
:attr:`WireServer.requests`. Nothing here reaches the internet.

Reply builders:

- :func:`openai_sse` — Chat Completions chunks as ``data: {...}`` events ending in ``data: [DONE]``,
  built with :func:`openai_chunk`;
- :func:`anthropic_sse` — Messages API events (``event: message_start`` … ``message_stop``),
  built with the ``anthropic_*`` helpers;
- :func:`json_reply` — a plain JSON response, e.g. an error with ``retry-after-ms``.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: Provider variables the tests control; cleared so the developer's environment cannot leak in.
PROVIDER_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
                "OPENAI_CUSTOM_HEADERS", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
                "ANTHROPIC_PROFILE", "ANTHROPIC_CUSTOM_HEADERS", "GOOGLE_API_KEY",
                "GOOGLE_GENERATIVE_AI_API_KEY", "GOOGLE_BASE_URL")


def isolate_env(monkeypatch: Any) -> None:
    """Clear provider variables and keep any HTTP proxy away from 127.0.0.1."""
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


@dataclass
class Reply:
    """One scripted HTTP response.

    ``events`` (bytes each) are written one by one as a chunked body, with ``delay`` seconds
    before each; ``stall`` seconds are waited after the first event (the server's stop ends
    the wait), to test aborts of a stream that has gone quiet; ``cut`` drops the connection
    after the events, before the body is complete.
    """

    status: int = 200
    headers: dict = field(default_factory=dict)
    body: bytes | None = None
    events: list[bytes] | None = None
    delay: float = 0.0
    stall: float = 0.0
    cut: bool = False


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict
    body: Any


class WireServer:
    """A scripted local HTTP server (see the module docstring). Use as a context manager."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self._replies: list[Reply] = [json_reply(500, {"error": {"message": "no reply scripted"}})]
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="wire-server",
                                        daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, *replies: Reply) -> "WireServer":
        """Script the replies: request n gets ``replies[n]``, later ones the last reply."""
        self._replies = list(replies)
        return self

    @property
    def bodies(self) -> list[Any]:
        return [r.body for r in self.requests]

    def start(self) -> "WireServer":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> "WireServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _next_reply(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            return self._replies[min(len(self.requests), len(self._replies)) - 1]

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # chunked streaming bodies, keep-alive like real APIs

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw
                reply = server._next_reply(Recorded(self.command, self.path,
                                                    {k.lower(): v for k, v in self.headers.items()}, body))
                if reply.events is None:
                    payload = reply.body or b""
                    self.send_response(reply.status)
                    for name, value in {"content-type": "application/json", **reply.headers}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(reply.status)
                for name, value in {"content-type": "text/event-stream", "cache-control": "no-cache",
                                    **reply.headers}.items():
                    self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for i, event in enumerate(reply.events):
                        if reply.delay:
                            time.sleep(reply.delay)
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
                        self.wfile.flush()
                        if i == 0 and reply.stall and server._stopping.wait(reply.stall):
                            return
                    if reply.cut:
                        self.close_connection = True
                        return
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the client hung up (an abort): nothing left to send

            do_GET = do_POST  # recorded and answered alike (a fetched schema, a probe)

        return Handler


def free_port() -> int:
    """A local port with nothing listening on it (for connection-error tests)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def json_reply(status: int, body: Any, headers: dict | None = None) -> Reply:
    return Reply(status=status, headers=dict(headers or {}), body=json.dumps(body).encode())


# -- OpenAI Chat Completions ---------------------------------------------------------------

OPENAI_HEADERS = {"x-request-id": "req_openai_1", "openai-processing-ms": "42"}


def openai_chunk(delta: dict | None = None, *, finish_reason: str | None = None, usage: dict | None = None,
                 id: str = "chatcmpl-1", model: str = "gpt-test", created: int = 1700000000,
                 choices: bool = True) -> dict:
    """One ``chat.completion.chunk``; ``choices=False`` makes the usage-only final chunk."""
    chunk: dict = {"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                   "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason}] if choices else []}
    if usage is not None:
        chunk["usage"] = usage
    return chunk


def openai_sse(chunks: list[dict], *, headers: dict | None = None, done: bool = True, **options: Any) -> Reply:
    events = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
    if done:
        events.append(b"data: [DONE]\n\n")
    return Reply(headers={**OPENAI_HEADERS, **(headers or {})}, events=events, **options)


def openai_text_reply(pieces: list[str], *, finish_reason: str = "stop", usage: dict | None = None,
                      **options: Any) -> Reply:
    """A streamed text answer: a role chunk, one chunk per piece, the finish, the usage chunk."""
    chunks = [openai_chunk({"role": "assistant", "content": ""})]
    chunks += [openai_chunk({"content": p}) for p in pieces]
    chunks.append(openai_chunk({}, finish_reason=finish_reason))
    chunks.append(openai_chunk(choices=False, usage=usage or {"prompt_tokens": 5, "completion_tokens": len(pieces),
                                                               "total_tokens": 5 + len(pieces)}))
    return openai_sse(chunks, **options)


def openai_tool_call_delta(index: int, *, id: str | None = None, name: str | None = None,
                           arguments: str | None = None) -> dict:
    call: dict = {"index": index}
    if id is not None:
        call["id"] = id
        call["type"] = "function"
    function = {}
    if name is not None:
        function["name"] = name
    if arguments is not None:
        function["arguments"] = arguments
    if function:
        call["function"] = function
    return {"tool_calls": [call]}


# -- Anthropic Messages ----------------------------------------------------------------------

ANTHROPIC_HEADERS = {"request-id": "req_anthropic_1", "anthropic-ratelimit-requests-remaining": "99"}


def anthropic_event(data: dict) -> bytes:
    return b"event: " + data["type"].encode() + b"\ndata: " + json.dumps(data).encode() + b"\n\n"


def anthropic_sse(events: list[dict], *, headers: dict | None = None, **options: Any) -> Reply:
    return Reply(headers={**ANTHROPIC_HEADERS, **(headers or {})}, events=[anthropic_event(e) for e in events],
                 **options)


def anthropic_message_start(*, id: str = "msg_1", model: str = "claude-test", input_tokens: int = 10,
                            cache_read: int | None = None, cache_creation: int | None = None) -> dict:
    usage: dict = {"input_tokens": input_tokens, "output_tokens": 1}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_creation is not None:
        usage["cache_creation_input_tokens"] = cache_creation
    return {"type": "message_start", "message": {
        "id": id, "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": usage}}


def anthropic_text_block(index: int, pieces: list[str]) -> list[dict]:
    return ([{"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}]
            + [{"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}
               for p in pieces]
            + [{"type": "content_block_stop", "index": index}])


def anthropic_thinking_block(index: int, pieces: list[str]) -> list[dict]:
    return ([{"type": "content_block_start", "index": index,
              "content_block": {"type": "thinking", "thinking": "", "signature": ""}}]
            + [{"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}}
               for p in pieces]
            + [{"type": "content_block_delta", "index": index,
                "delta": {"type": "signature_delta", "signature": "sig"}},
               {"type": "content_block_stop", "index": index}])


def anthropic_tool_block(index: int, id: str, name: str, fragments: list[str]) -> list[dict]:
    return ([{"type": "content_block_start", "index": index,
              "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}]
            + [{"type": "content_block_delta", "index": index,
                "delta": {"type": "input_json_delta", "partial_json": f}} for f in fragments]
            + [{"type": "content_block_stop", "index": index}])


def anthropic_message_end(stop_reason: str = "end_turn", *, output_tokens: int = 7) -> list[dict]:
    return [{"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
             "usage": {"output_tokens": output_tokens}},
            {"type": "message_stop"}]


def anthropic_text_reply(pieces: list[str], *, stop_reason: str = "end_turn", **options: Any) -> Reply:
    return anthropic_sse([anthropic_message_start(), *anthropic_text_block(0, pieces),
                          *anthropic_message_end(stop_reason)], **options)


async def collect(model: Any, request: Any, *, close: bool = True) -> list[dict]:
    """All events of one ``model.stream(request)``; then the model's client is closed.

    Closing keeps pooled connections from outliving the test's event loop.
    """
    try:
        return [event async for event in model.stream(request)]
    finally:
        if close and hasattr(model, "aclose"):
            await model.aclose()


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]
