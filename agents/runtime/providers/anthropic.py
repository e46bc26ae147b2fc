"""``anthropic/<model>``: Anthropic's Messages API, streamed through the official SDK.

Contract (see :mod:`agents.runtime.providers.base`): :meth:`AnthropicModel.stream` yields one
``request`` event (the JSON body sent), ``warning`` events for settings the API cannot honour,
one ``response-metadata`` event (message id, model, timestamp, HTTP response headers) when the
message starts, ``text-delta`` / ``reasoning-delta`` events as they arrive, one ``tool-call`` event
per ``tool_use`` block as soon as that block ends, and a final ``finish`` event whose
``provider_metadata`` is ``{"anthropic": {"cacheCreationInputTokens": n}}``. Failures raise
:class:`~agents.runtime.errors.ModelError`; an abort closes the HTTP stream and returns without
``finish``.

Prompt caching: ``providerOptions.anthropic.cacheControl`` (or ``cache_control``) on a system
message, a user/assistant message or a single content part becomes ``cache_control`` on the
matching block (on the last block for a message-level option).

Usage: ``input_tokens`` is Anthropic's ``input_tokens``, which does not count cache reads or
writes; those are ``cached_input_tokens`` and ``cacheCreationInputTokens``.
"""

from __future__ import annotations

import base64
import os
from typing import TYPE_CHECKING, Any, AsyncIterator, Sequence

from ..errors import MissingCredentialsError, ModelError
from ..naming import snake_keys
from .base import ModelRequest, usage
from .sdk import (RETRYABLE_STATUSES, Aborted, AbortWatch, DEFAULT_MAX_RETRIES, SDKClientCache, args_object,
                  iso_timestamp, json_text, retry_after_seconds, media_of, server_message,
                  timed_out)

if TYPE_CHECKING:  # pragma: no cover
    import anthropic as anthropic_sdk

DEFAULT_MAX_TOKENS = 4096

_FINISH_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length",
                   "model_context_window_exceeded": "length", "tool_use": "tool-calls",
                   "refusal": "content-filter"}
_UNSUPPORTED_SETTINGS = ("presence_penalty", "frequency_penalty", "seed")


def _cache_control(owner: dict | None) -> dict | None:
    """The ``cache_control`` an item's ``providerOptions.anthropic`` asks for, if any."""
    options = ((owner or {}).get("providerOptions") or {}).get("anthropic") or {}
    value = options.get("cacheControl", options.get("cache_control"))
    if not value:
        return None
    if value is True:
        return {"type": "ephemeral"}
    if isinstance(value, dict):
        return {"type": "ephemeral", **value}
    raise ModelError(f"anthropic cacheControl must be true or a dict, not {value!r}", code="invalid_messages")


def _with_cache(block: dict, owner: dict | None) -> dict:
    control = _cache_control(owner)
    if control:
        block["cache_control"] = control
    return block


def _source(part: dict) -> tuple[dict, str | None]:
    kind, mime, data = media_of(part)
    if kind == "url":
        return {"type": "url", "url": data}, mime
    return {"type": "base64", "media_type": mime, "data": data}, mime


def _user_block(part: dict) -> dict:
    kind = part.get("type")
    if kind == "text":
        block: dict = {"type": "text", "text": part["text"]}
    elif kind in ("image", "file"):
        # the type comes from mediaType / mimeType or a data URL's header (media_of)
        source, mime = _source(part)
        if kind == "image" or (mime or "").startswith("image/"):
            if source["type"] == "base64":
                source["media_type"] = mime or "image/png"
            return _with_cache({"type": "image", "source": source}, part)
        if mime == "text/plain" and source["type"] == "base64":
            source = {"type": "text", "media_type": "text/plain",
                      "data": base64.b64decode(source["data"]).decode("utf-8", "replace")}
        elif mime == "application/pdf" or (mime is None and source["type"] == "url"):
            pass  # a PDF (a document URL without a type is taken to be one)
        else:
            raise ModelError(f"anthropic accepts PDF, plain-text and image files, not {mime or 'untyped data'}",
                             code="unsupported_content")
        block = {"type": "document", "source": source}
        if part.get("filename"):
            block["title"] = part["filename"]
    else:
        raise ModelError(f"a user message cannot hold a {kind!r} part", code="unsupported_content")
    return _with_cache(block, part)


def _assistant_blocks(content: Any) -> list[dict]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks: list[dict] = []
    for part in content:
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):  # the API rejects empty text blocks
                blocks.append(_with_cache({"type": "text", "text": part["text"]}, part))
        elif kind == "reasoning":
            # Thinking can only be replayed with the signature Anthropic issued for it.
            signature = ((part.get("providerOptions") or {}).get("anthropic") or {}).get("signature")
            if signature:
                blocks.append({"type": "thinking", "thinking": part.get("text", ""), "signature": signature})
        elif kind == "tool-call":
            blocks.append(_with_cache({"type": "tool_use", "id": part["toolCallId"], "name": part["toolName"],
                                       "input": args_object(part.get("args"))}, part))
    return blocks


def anthropic_messages(messages: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """Runtime model messages as ``(system_blocks, messages)`` for the Messages API.

    System messages become system text blocks wherever they stand. Tool results become
    ``tool_result`` blocks of a user message. Consecutive messages of the same wire role are
    merged, because the API wants user and assistant turns to alternate.
    """
    system: list[dict] = []
    out: list[dict] = []

    def append(role: str, blocks: list[dict], owner: dict) -> None:
        if not blocks:
            return
        control = _cache_control(owner)
        if control and "cache_control" not in blocks[-1]:
            blocks[-1]["cache_control"] = control
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        role, content = message["role"], message["content"]
        if role == "system":
            text = content if isinstance(content, str) else "\n".join(
                p.get("text", "") for p in content if p.get("type") == "text")
            system.append(_with_cache({"type": "text", "text": text}, message))
        elif role == "user":
            parts = [{"type": "text", "text": content}] if isinstance(content, str) else content
            append("user", [_user_block(p) for p in parts], message)
        elif role == "assistant":
            append("assistant", _assistant_blocks(content), message)
        elif role == "tool":
            blocks = []
            for part in content if isinstance(content, list) else []:
                if part.get("type") != "tool-result":
                    continue
                block = {"type": "tool_result", "tool_use_id": part["toolCallId"],
                         "content": json_text(part.get("result"))}
                if part.get("isError"):
                    block["is_error"] = True
                blocks.append(_with_cache(block, part))
            append("user", blocks, message)
        else:
            raise ModelError(f"unknown message role {role!r}", code="invalid_messages")
    return system, out


def anthropic_tool_choice(choice: Any) -> dict:
    if choice in (None, "auto"):
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    if isinstance(choice, dict) and choice.get("type") == "tool" and choice.get("tool_name"):
        return {"type": "tool", "name": choice["tool_name"]}
    raise ModelError(f"unsupported tool_choice {choice!r}", code="invalid_settings")


class AnthropicModel(SDKClientCache):
    """A Claude model reached through ``anthropic.AsyncAnthropic().messages``.

    The key is ``api_key`` or ``$ANTHROPIC_API_KEY``; the base URL ``base_url``, else
    ``$ANTHROPIC_BASE_URL``, else the SDK's default. Both are read when the client is built; the
    client is reused while key, URL and running event loop stay the same.
    """

    provider = "anthropic"
    env_keys = ("ANTHROPIC_API_KEY",)

    def __init__(self, model_id: str, *, api_key: str | None = None, base_url: str | None = None,
                 headers: dict | None = None, timeout: float | None = None) -> None:
        self.model_id = model_id
        self.timeout = timeout
        self.api_key = api_key
        self._base_url = base_url
        self.headers = dict(headers or {})
        self._client_state: tuple[Any, ...] | None = None  # (loop, key, url, clients): SDKClientCache

    def __repr__(self) -> str:
        return f"AnthropicModel(anthropic/{self.model_id})"

    @property
    def base_url(self) -> str | None:
        return self._base_url or os.environ.get("ANTHROPIC_BASE_URL") or None

    def resolve_api_key(self) -> str:
        """The key to send; raises :class:`MissingCredentialsError` naming the variable."""
        key = self.api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise MissingCredentialsError(self.provider, list(self.env_keys))
        return key

    def _new_client(self, key: str, url: str | None) -> "anthropic_sdk.AsyncAnthropic":
        import anthropic as anthropic_sdk

        return anthropic_sdk.AsyncAnthropic(api_key=key, base_url=url, default_headers=self.headers or None,
                                            max_retries=DEFAULT_MAX_RETRIES,
                                            http_client=anthropic_sdk.DefaultAioHttpClient())

    def build_body(self, request: ModelRequest) -> tuple[dict, list[str]]:
        """The JSON body for ``request`` and the warnings about what it could not carry."""
        warnings: list[str] = []
        system, messages = anthropic_messages(request.messages)
        settings = request.settings or {}
        options = snake_keys((request.provider_options or {}).get(self.provider))
        thinking = options.get("thinking")
        if isinstance(thinking, dict):
            thinking = options["thinking"] = snake_keys(thinking)  # budgetTokens → budget_tokens
        thinking_on = isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")

        max_tokens = settings.get("max_output_tokens") or DEFAULT_MAX_TOKENS
        if thinking_on and isinstance(thinking.get("budget_tokens"), int):
            # The budget is part of max_tokens; add it so the answer keeps the requested room.
            max_tokens += thinking["budget_tokens"]
        body: dict = {"model": self.model_id, "max_tokens": max_tokens, "messages": messages, "stream": True}
        if system:
            body["system"] = system
        for name in ("temperature", "top_p", "top_k"):
            if settings.get(name) is None:
                continue
            if thinking_on:
                warnings.append(f"anthropic does not allow {name!r} with extended thinking; it was ignored")
            else:
                body[name] = settings[name]
        if settings.get("stop_sequences"):
            body["stop_sequences"] = list(settings["stop_sequences"])
        for name in _UNSUPPORTED_SETTINGS:
            if settings.get(name) is not None:
                warnings.append(f"anthropic does not support the setting {name!r}; it was ignored")
        if request.tools:
            body["tools"] = [{"name": t["name"], "description": t.get("description") or "",
                              "input_schema": t.get("parameters") or {"type": "object", "properties": {}}}
                             for t in request.tools]
            body["tool_choice"] = anthropic_tool_choice(request.tool_choice)
        fmt = request.response_format
        if fmt and fmt.get("type") == "json":
            if fmt.get("schema"):
                body["output_config"] = {"format": {"type": "json_schema", "schema": fmt["schema"]}}
            else:
                warnings.append("anthropic needs a schema for JSON output; the response format was ignored")
        body.update(options)
        return body, warnings

    def _model_error(self, exc: BaseException) -> ModelError:
        import anthropic as anthropic_sdk

        where = self.base_url or "the default endpoint"
        if isinstance(exc, anthropic_sdk.APIStatusError):
            status = exc.status_code
            detail = server_message(exc.body) or exc.message
            if status < 400:  # an error event inside a 200 stream (e.g. overloaded_error)
                return ModelError(f"anthropic stream error for model {self.model_id!r}: {detail}",
                                  code="provider_stream_error", retryable=True)
            return ModelError(f"anthropic API error (HTTP {status}) for model {self.model_id!r}: {detail}",
                              code="provider_http_error", status=status,
                              retryable=status in RETRYABLE_STATUSES or status >= 500,
                              retry_after=retry_after_seconds(getattr(exc.response, "headers", None)))
        if (isinstance(exc, anthropic_sdk.APITimeoutError) or _is_transport_error(exc)) and timed_out(exc):
            return ModelError(f"anthropic request to {where} timed out", code="provider_connection_error",
                              retryable=True)
        if isinstance(exc, anthropic_sdk.APIConnectionError) or _is_transport_error(exc):
            cause = exc if _is_transport_error(exc) else (exc.__cause__ or exc.__context__)
            detail = f": {cause}" if cause else ""
            return ModelError(f"anthropic connection to {where} failed{detail}", code="provider_connection_error",
                              retryable=True)
        if isinstance(exc, anthropic_sdk.APIError):
            return ModelError(f"anthropic stream error for model {self.model_id!r}: "
                              f"{server_message(exc.body) or exc.message}", code="provider_stream_error")
        return ModelError(f"anthropic sent a malformed stream: {exc}", code="provider_stream_error")

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict]:
        """Stream one model step as model events (see the module docstring)."""
        import anthropic as anthropic_sdk

        client, body, warnings, release = self.prepare_call(request)
        try:  # the client's calls in flight count this one until it ends (SDKClientCache)
            yield {"type": "request", "body": body}
            for message in warnings:
                yield {"type": "warning", "message": message}

            settings = request.settings or {}

            watch = AbortWatch(request.abort_signal)
            sdk_stream = None
            try:
                try:
                    # the body goes as built (wire JSON) and the events come back as parsed JSON: the
                    # SDK's typed walk over the messages and its model built for every event cost
                    # event-loop time on every call; the SDK still sends, retries, authenticates and
                    # raises the errors the server reports, in the stream too
                    extra_headers = settings.get("headers") or None
                    sdk_stream = await watch.run(client.post(
                        "/v1/messages", body=body, options={"headers": extra_headers} if extra_headers else {},
                        cast_to=object, stream=True, stream_cls=anthropic_sdk.AsyncStream[object]))
                    # AsyncStream keeps the httpx response: its headers are the HTTP response's.
                    headers = dict(sdk_stream.response.headers)
                    blocks: dict[int, dict] = {}  # content block index → tool_use being assembled
                    counts: dict[str, Any] = {}
                    stop_reason: str | None = None
                    while (event := await watch.next_object(sdk_stream, "an event")) is not None:
                        if request.include_raw:
                            yield {"type": "raw", "raw_value": event}
                        kind = event.get("type")
                        if kind == "message_start":
                            message = _object(event.get("message"))
                            _merge_usage(counts, message.get("usage"))
                            yield {"type": "response-metadata", "id": message.get("id"),
                                   "model_id": message.get("model") or self.model_id, "timestamp": iso_timestamp(),
                                   "headers": headers}
                        elif kind == "content_block_start":
                            block = _object(event.get("content_block"))
                            block_kind = block.get("type")
                            if block_kind == "tool_use":
                                initial = block.get("input")
                                blocks[event.get("index")] = {"id": block.get("id"), "name": block.get("name") or "",
                                                              "json": json_text(initial) if initial else ""}
                            elif block_kind == "text" and block.get("text"):
                                yield {"type": "text-delta", "text": block["text"]}
                            elif block_kind == "thinking" and block.get("thinking"):
                                yield {"type": "reasoning-delta", "text": block["thinking"]}
                        elif kind == "content_block_delta":
                            delta = _object(event.get("delta"))
                            delta_kind = delta.get("type")
                            if delta_kind == "text_delta" and isinstance(delta.get("text"), str):
                                yield {"type": "text-delta", "text": delta["text"]}
                            elif delta_kind == "thinking_delta" and isinstance(delta.get("thinking"), str):
                                yield {"type": "reasoning-delta", "text": delta["thinking"]}
                            elif (delta_kind == "input_json_delta" and event.get("index") in blocks
                                  and isinstance(delta.get("partial_json"), str)):
                                blocks[event["index"]]["json"] += delta["partial_json"]
                        elif kind == "content_block_stop":
                            call = blocks.pop(event.get("index"), None)
                            if call is not None:
                                yield {"type": "tool-call", "tool_call_id": call["id"], "tool_name": call["name"],
                                       "args_text": call["json"] or "{}"}
                        elif kind == "message_delta":
                            stop_reason = _object(event.get("delta")).get("stop_reason") or stop_reason
                            _merge_usage(counts, event.get("usage"))
                except Aborted:
                    return
                except (anthropic_sdk.APIError, ValueError) as exc:  # ValueError: undecodable event JSON
                    raise self._model_error(exc) from exc
                except Exception as exc:
                    # This SDK lets transport errors raised while reading the body escape unwrapped.
                    if _is_transport_error(exc):
                        raise self._model_error(exc) from exc
                    raise

                yield {"type": "finish", "finish_reason": _FINISH_REASONS.get(stop_reason or "", "other"),
                       "usage": usage(counts.get("input_tokens"), counts.get("output_tokens"),
                                      reasoning_tokens=counts.get("thinking_tokens"),
                                      cached_input_tokens=counts.get("cache_read_input_tokens"))
                       if "input_tokens" in counts or "output_tokens" in counts else None,
                       "provider_metadata": {"anthropic": {
                           "cacheCreationInputTokens": counts.get("cache_creation_input_tokens")}}}
            finally:
                watch.close()
                if sdk_stream is not None:
                    await sdk_stream.close()
        finally:
            release()


def _object(value: Any) -> dict:
    """``value`` when it is a JSON object, else an empty one (a field of an unexpected shape)."""
    return value if isinstance(value, dict) else {}


def _merge_usage(counts: dict, raw: Any) -> None:
    """Fold a usage object into ``counts``: later (cumulative) values replace earlier ones."""
    raw = _object(raw)
    for name in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = raw.get(name)
        if value is not None:
            counts[name] = value
    details = _object(raw.get("output_tokens_details"))
    if details.get("thinking_tokens") is not None:
        counts["thinking_tokens"] = details["thinking_tokens"]


def _is_transport_error(exc: BaseException) -> bool:
    try:
        import httpx2
    except ImportError:  # pragma: no cover - the SDK depends on it
        return False
    return isinstance(exc, httpx2.TransportError)
