"""``openai/<model>``: the OpenAI Chat Completions API, streamed through the official SDK.

The same adapter serves every server that speaks the Chat Completions wire format (vLLM, Ollama,
llama.cpp, LM Studio, Gemini's compatibility endpoint): point ``base_url`` (or ``OPENAI_BASE_URL``)
at it. A custom server needs no key; the SDK is then given the placeholder ``"not-needed"``.

Contract (see :mod:`agents.runtime.providers.base`): :meth:`OpenAIChatModel.stream` yields, in
order, one ``request`` event (the JSON body sent), ``warning`` events for settings the API
cannot honour, one ``response-metadata`` event (id, model, timestamp, HTTP response headers),
``text-delta`` / ``reasoning-delta`` events as they arrive (``raw`` events interleaved when
``request.include_raw``), one ``tool-call`` event per complete call once the stream has ended, and
a final ``finish`` event. Failures raise :class:`~agents.runtime.errors.ModelError`; when
``request.abort_signal`` fires the HTTP stream is closed and the generator returns without a
``finish`` event.

What the Anthropic adapter shares with this one (client cache, retries, abort racing, media parts)
lives in :mod:`agents.runtime.providers.sdk`. The SDK itself is imported lazily, on first use.
"""

from __future__ import annotations

import os
import re
import uuid
from typing import TYPE_CHECKING, Any, AsyncIterator, Sequence

from ..errors import MissingCredentialsError, ModelError
from ..naming import snake_keys
from .base import ModelRequest, usage
from .sdk import (DEFAULT_MAX_RETRIES, RETRYABLE_STATUSES, Aborted, AbortWatch, SDKClientCache, args_text,
                  iso_timestamp, json_text, retry_after_seconds, media_of, server_message,
                  timed_out)

if TYPE_CHECKING:  # pragma: no cover
    import openai as openai_sdk

#: Key given to the SDK for keyless servers (vLLM, Ollama, ...): the SDK refuses an empty key.
PLACEHOLDER_KEY = "not-needed"


# --------------------------------------------------------------------------------------------
# Translation: runtime messages → Chat Completions messages
# --------------------------------------------------------------------------------------------

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav",
                  "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def _user_part(part: dict) -> dict:
    kind = part.get("type")
    if kind == "text":
        return {"type": "text", "text": part["text"]}
    if kind == "image":
        source, mime, data = media_of(part)
        url = data if source == "url" else f"data:{mime or 'image/png'};base64,{data}"
        return {"type": "image_url", "image_url": {"url": url}}
    if kind == "file":
        source, mime, data = media_of(part)
        mime = mime or "application/octet-stream"
        if mime.startswith("image/"):
            return _user_part({**part, "type": "image"})
        if source == "url":
            raise ModelError("chat completions accept files only as data, not as URLs "
                             f"({data}); pass the bytes or a base64 string", code="unsupported_content")
        if mime in _AUDIO_FORMATS:
            return {"type": "input_audio", "input_audio": {"data": data, "format": _AUDIO_FORMATS[mime]}}
        file = {"file_data": f"data:{mime};base64,{data}"}
        file["filename"] = part.get("filename") or "file"
        return {"type": "file", "file": file}
    raise ModelError(f"a user message cannot hold a {kind!r} part", code="unsupported_content")


def chat_messages(messages: Sequence[dict]) -> list[dict]:
    """Runtime model messages as Chat Completions ``messages``.

    Reasoning parts of assistant messages are dropped: the API has no input form for them.
    A tool message becomes one ``tool`` message per result, with the result as JSON text.
    """
    out: list[dict] = []
    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            text = content if isinstance(content, str) else "\n".join(
                p.get("text", "") for p in content if p.get("type") == "text")
            out.append({"role": "system", "content": text})
        elif role == "user":
            if isinstance(content, str):
                out.append({"role": "user", "content": content})
            else:
                out.append({"role": "user", "content": [_user_part(p) for p in content]})
        elif role == "assistant":
            if isinstance(content, str):
                out.append({"role": "assistant", "content": content})
                continue
            text = "".join(p.get("text", "") for p in content if p.get("type") == "text")
            calls = [{"id": p["toolCallId"], "type": "function",
                      "function": {"name": p["toolName"], "arguments": args_text(p.get("args"))}}
                     for p in content if p.get("type") == "tool-call"]
            entry: dict = {"role": "assistant", "content": text}
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        elif role == "tool":
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "tool-result":
                    out.append({"role": "tool", "tool_call_id": part["toolCallId"],
                                "content": json_text(part.get("result"))})
        else:
            raise ModelError(f"unknown message role {role!r}", code="invalid_messages")
    return out


def chat_tool_choice(choice: Any) -> Any:
    if choice in (None, "auto", "none", "required"):
        return choice or "auto"
    if isinstance(choice, dict) and choice.get("type") == "tool" and choice.get("tool_name"):
        return {"type": "function", "function": {"name": choice["tool_name"]}}
    raise ModelError(f"unsupported tool_choice {choice!r}", code="invalid_settings")


_FINISH_REASONS = {"stop": "stop", "length": "length", "tool_calls": "tool-calls",
                   "function_call": "tool-calls", "content_filter": "content-filter"}

# Settings passed through under another (or the same) name; everything else is ignored, except
# the known ones the API cannot honour, which produce a warning.
_SETTING_NAMES = {"temperature": "temperature", "top_p": "top_p", "presence_penalty": "presence_penalty",
                  "frequency_penalty": "frequency_penalty", "seed": "seed", "stop_sequences": "stop"}
_UNSUPPORTED_SETTINGS = ("top_k",)


class _ToolCallBuffer:
    """Accumulates streamed function-call fragments, keyed by their ``index``."""

    def __init__(self) -> None:
        self.calls: dict[int, dict] = {}
        self._last: int | None = None

    def add(self, fragment: dict) -> None:
        index = fragment.get("index")
        call_id = fragment.get("id")
        if index is None:
            # Some compatible servers omit the index: a new id starts a new call, otherwise
            # the fragment continues the previous one.
            known = {c["id"] for c in self.calls.values()}
            index = len(self.calls) if (call_id and call_id not in known) or self._last is None else self._last
        self._last = index
        call = self.calls.setdefault(index, {"id": None, "name": "", "args": ""})
        if call_id:
            call["id"] = call_id
        function = fragment.get("function")
        if isinstance(function, dict):
            if function.get("name"):
                call["name"] = function["name"]
            if isinstance(function.get("arguments"), str):
                call["args"] += function["arguments"]

    def events(self) -> list[dict]:
        return [{"type": "tool-call", "tool_call_id": call["id"] or f"call_{uuid.uuid4().hex[:24]}",
                 "tool_name": call["name"], "args_text": call["args"] or "{}"}
                for _, call in sorted(self.calls.items())]


# --------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------

class OpenAIChatModel(SDKClientCache):
    """A chat model reached through ``openai.AsyncOpenAI().chat.completions``.

    The key is ``api_key`` or the first set variable of ``env_key`` (a name or a sequence of
    names); the base URL is ``base_url``, else ``$OPENAI_BASE_URL`` (:attr:`base_url_env`), else
    the SDK's default. Both are read when the client is built, so environment changes apply to
    a cached model. The client is built on first use and reused while the key, URL and running
    event loop stay the same (an HTTP connection pool cannot cross event loops).
    """

    #: Environment variable naming the base URL when none is given (``None``: no variable).
    base_url_env: str | None = "OPENAI_BASE_URL"
    #: Base URL used when neither the argument nor the variable gives one (``None``: the SDK's).
    default_base_url: str | None = None

    def __init__(self, model_id: str, *, api_key: str | None = None, base_url: str | None = None,
                 headers: dict | None = None, provider: str = "openai",
                 env_key: str | Sequence[str] = "OPENAI_API_KEY", timeout: float | None = None) -> None:
        self.model_id = model_id
        self.timeout = timeout
        self.provider = provider
        self.api_key = api_key
        self._base_url = base_url
        self.headers = dict(headers or {})
        self.env_keys = (env_key,) if isinstance(env_key, str) else tuple(env_key)
        self._client_state: tuple[Any, ...] | None = None  # (loop, key, url, clients): SDKClientCache

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.provider}/{self.model_id})"

    # -- configuration --------------------------------------------------------------------

    @property
    def base_url(self) -> str | None:
        if self._base_url:
            return self._base_url
        if self.base_url_env and os.environ.get(self.base_url_env):
            return os.environ[self.base_url_env]
        return self.default_base_url

    def _keyless_allowed(self) -> bool:
        """A custom server (any configured base URL) may run without a key."""
        return self.base_url is not None

    def resolve_api_key(self) -> str:
        """The key to send; raises :class:`MissingCredentialsError` naming the variables."""
        if self.api_key:
            return self.api_key
        for name in self.env_keys:
            if os.environ.get(name):
                return os.environ[name]
        if self._keyless_allowed():
            return PLACEHOLDER_KEY
        raise MissingCredentialsError(self.provider, list(self.env_keys))

    def _new_client(self, key: str, url: str | None) -> "openai_sdk.AsyncOpenAI":
        import openai as openai_sdk

        return openai_sdk.AsyncOpenAI(api_key=key, base_url=url, default_headers=self.headers or None,
                                      max_retries=DEFAULT_MAX_RETRIES,
                                      http_client=openai_sdk.DefaultAioHttpClient())

    # -- request --------------------------------------------------------------------------

    def _max_tokens_name(self) -> str:
        # OpenAI's reasoning models reject max_tokens; compatible servers mostly know only it.
        if self.provider == "openai" and re.match(r"^(o\d|gpt-5)", self.model_id):
            return "max_completion_tokens"
        return "max_tokens"

    def build_body(self, request: ModelRequest) -> tuple[dict, list[str]]:
        """The JSON body for ``request`` and the warnings about what it could not carry."""
        warnings: list[str] = []
        body: dict = {"model": self.model_id, "messages": chat_messages(request.messages),
                      "stream": True, "stream_options": {"include_usage": True}}
        settings = request.settings or {}
        for name, wire in _SETTING_NAMES.items():
            if settings.get(name) is not None:
                body[wire] = settings[name]
        if settings.get("max_output_tokens") is not None:
            body[self._max_tokens_name()] = settings["max_output_tokens"]
        for name in _UNSUPPORTED_SETTINGS:
            if settings.get(name) is not None:
                warnings.append(f"{self.provider} does not support the setting {name!r}; it was ignored")
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": t["name"], "description": t.get("description") or "",
                "parameters": t.get("parameters") or {"type": "object", "properties": {}}}}
                for t in request.tools]
            body["tool_choice"] = chat_tool_choice(request.tool_choice)
        fmt = request.response_format
        if fmt and fmt.get("type") == "json":
            if fmt.get("schema"):
                body["response_format"] = {"type": "json_schema", "json_schema": {
                    "name": fmt.get("name") or "response", "schema": fmt["schema"], "strict": False}}
            else:
                body["response_format"] = {"type": "json_object"}
        body.update(snake_keys((request.provider_options or {}).get(self.provider)))
        return body, warnings

    # -- errors ---------------------------------------------------------------------------

    def _model_error(self, exc: BaseException) -> ModelError:
        import openai as openai_sdk

        where = self.base_url or "the default endpoint"
        if isinstance(exc, openai_sdk.APIStatusError):
            status = exc.status_code
            detail = server_message(exc.body) or exc.message
            return ModelError(f"{self.provider} API error (HTTP {status}) for model {self.model_id!r}: {detail}",
                              code="provider_http_error", status=status,
                              retryable=status in RETRYABLE_STATUSES or status >= 500,
                              retry_after=retry_after_seconds(getattr(exc.response, "headers", None)))
        if isinstance(exc, openai_sdk.APITimeoutError) and timed_out(exc):
            return ModelError(f"{self.provider} request to {where} timed out", code="provider_connection_error",
                              retryable=True)
        if isinstance(exc, openai_sdk.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f": {cause}" if cause else ""
            return ModelError(f"{self.provider} connection to {where} failed{detail}",
                              code="provider_connection_error", retryable=True)
        if isinstance(exc, openai_sdk.APIError):  # an error object inside the event stream
            detail = server_message(exc.body) or exc.message
            return ModelError(f"{self.provider} stream error for model {self.model_id!r}: {detail}",
                              code="provider_stream_error")
        return ModelError(f"{self.provider} sent a malformed stream: {exc}", code="provider_stream_error")

    # -- streaming ------------------------------------------------------------------------

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict]:
        """Stream one model step as model events (see the module docstring)."""
        import openai as openai_sdk

        client, body, warnings, release = self.prepare_call(request)
        try:  # the client's calls in flight count this one until it ends (SDKClientCache)
            yield {"type": "request", "body": body}
            for message in warnings:
                yield {"type": "warning", "message": message}

            settings = request.settings or {}
            extra_headers = settings.get("headers") or None

            watch = AbortWatch(request.abort_signal)
            sdk_stream = None
            try:
                try:
                    # The body goes as built (wire JSON: any option a compatible server understands
                    # reaches it unchanged) and the chunks come back as parsed JSON: the SDK's typed
                    # walk over the messages and its model built for every chunk cost 1 to 2 ms of
                    # event-loop time per call. The SDK still sends, retries, authenticates and
                    # raises the errors the server reports, in the stream too.
                    options = {"headers": extra_headers} if extra_headers else {}
                    sdk_stream = await watch.run(client.post(
                        "/chat/completions", body=body, options=options, cast_to=object, stream=True,
                        stream_cls=openai_sdk.AsyncStream[object]))
                    # AsyncStream keeps the httpx response: its headers are the HTTP response's.
                    headers = dict(sdk_stream.response.headers)
                    metadata_sent = False
                    tool_calls = _ToolCallBuffer()
                    finish_reason: str | None = None
                    last_usage: Any = None
                    while (chunk := await watch.next_object(sdk_stream, "a chunk")) is not None:
                        if request.include_raw:
                            yield {"type": "raw", "raw_value": chunk}
                        if not metadata_sent:
                            metadata_sent = True
                            yield {"type": "response-metadata", "id": chunk.get("id") or None,
                                   "model_id": chunk.get("model") or self.model_id,
                                   "timestamp": iso_timestamp(chunk.get("created")), "headers": headers}
                        if chunk.get("usage") is not None:
                            last_usage = chunk["usage"]
                        for choice in chunk.get("choices") or ():
                            if not isinstance(choice, dict) or choice.get("index", 0) not in (0, None):
                                continue  # n > 1 is not part of the protocol: keep the first choice
                            delta = choice.get("delta")
                            if isinstance(delta, dict):
                                # vLLM/DeepSeek send reasoning_content, OpenRouter/Ollama reasoning.
                                reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                                if isinstance(reasoning, str) and reasoning:
                                    yield {"type": "reasoning-delta", "text": reasoning}
                                content = delta.get("content")
                                if isinstance(content, str) and content:
                                    yield {"type": "text-delta", "text": content}
                                for fragment in delta.get("tool_calls") or ():
                                    if isinstance(fragment, dict):
                                        tool_calls.add(fragment)
                            if choice.get("finish_reason"):
                                finish_reason = choice["finish_reason"]
                except Aborted:
                    return
                except (openai_sdk.APIError, ValueError) as exc:  # ValueError: undecodable chunk JSON
                    raise self._model_error(exc) from exc

                if not metadata_sent:
                    yield {"type": "response-metadata", "id": None, "model_id": self.model_id,
                           "timestamp": iso_timestamp(), "headers": headers}
                calls = tool_calls.events()
                for event in calls:
                    yield event
                reason = _FINISH_REASONS.get(finish_reason or "", "other")
                if calls and reason == "stop":
                    # Gemini's and Ollama's compatibility layers end tool-calling turns with "stop";
                    # the runtime decides whether to continue on "tool-calls".
                    reason = "tool-calls"
                yield {"type": "finish", "finish_reason": reason, "usage": _chat_usage(last_usage),
                       "provider_metadata": {}}
            finally:
                watch.close()
                if sdk_stream is not None:
                    await sdk_stream.close()
        finally:
            release()


def _chat_usage(raw: Any) -> dict | None:
    if not isinstance(raw, dict):
        return None  # the server sent no usage: unknown (the step reads zeros, the ledger records unknown)
    completion_details = raw.get("completion_tokens_details") or {}
    prompt_details = raw.get("prompt_tokens_details") or {}
    return usage(raw.get("prompt_tokens"), raw.get("completion_tokens"),
                 reasoning_tokens=completion_details.get("reasoning_tokens") if isinstance(completion_details, dict)
                 else None,
                 cached_input_tokens=prompt_details.get("cached_tokens") if isinstance(prompt_details, dict) else None)
