"""The editor's "Try it" panel: one run of a version, streamed to the page as JSON lines (NDJSON).

Each line is one frame (camelCase, as the API):

- ``{"type": "text", "text": ...}``: a piece of the answer (the page renders the whole answer as
  markdown, as the chat does);
- ``{"type": "tool-call", "toolCallId", "toolName", "args"}`` and ``{"type": "tool-result",
  "toolCallId", "toolName", "result", "isError"}``: the tools the run called and what they gave;
- ``{"type": "approval", "toolCallId", "toolName", "args"}``: a tool that waits for an approval (a
  try run is never resumed: the panel says so);
- ``{"type": "finish", "finishReason", "usage": {inputTokens, outputTokens, totalTokens, ...},
  "models": [...], "durationMs"}``: the last frame of a run that ended;
- ``{"type": "error", "message"}``: the run failed (its reason, for the operator trying a draft).

Nothing is published and no memory thread is written: the run has no memory option.
"""

from __future__ import annotations

import json
import time
from typing import Any, AsyncIterator, Callable

#: the steps a try run may take (a tool call and its answer, and one more)
TRY_MAX_STEPS = 3


def frame_line(frame: dict) -> bytes:
    return (json.dumps(frame, ensure_ascii=False, default=str) + "\n").encode()


def chunk_frame(chunk: dict) -> dict | None:
    """The frame a run's chunk becomes, or None for a chunk the panel does not show."""
    kind, payload = chunk.get("type"), chunk.get("payload") or {}
    if kind == "text-delta":
        return {"type": "text", "text": payload.get("text", "")}
    if kind == "tool-call":
        return {"type": "tool-call", "toolCallId": payload.get("toolCallId"), "toolName": payload.get("toolName"),
                "args": payload.get("args")}
    if kind == "tool-result":
        return {"type": "tool-result", "toolCallId": payload.get("toolCallId"), "toolName": payload.get("toolName"),
                "result": payload.get("result"), "isError": bool(payload.get("isError"))}
    if kind == "tool-call-approval":
        return {"type": "approval", "toolCallId": payload.get("toolCallId"), "toolName": payload.get("toolName"),
                "args": payload.get("args")}
    return None


async def try_frames(agent: Any, prompt: str, *, versions: dict | None,
                     clock: Callable[[], float] = time.monotonic) -> AsyncIterator[bytes]:
    """Run ``agent`` on ``prompt`` (``versions``: the version tried) and yield its frames as lines."""
    started = clock()
    try:
        output = await agent.stream(prompt, max_steps=TRY_MAX_STEPS, versions=versions)
        async for chunk in output.full_stream:
            frame = chunk_frame(chunk)
            if frame is not None:
                yield frame_line(frame)
        result = await output.get_full_output()
    except Exception as exc:  # shown to the operator, who is trying a draft
        yield frame_line({"type": "error", "message": str(exc)})
        return
    if result.error is not None:
        yield frame_line({"type": "error", "message": str(result.error)})
    yield frame_line({"type": "finish", "finishReason": result.finish_reason, "usage": result.total_usage.camel(),
                      "models": [m for m in result.models if m], "durationMs": int((clock() - started) * 1000)})


__all__ = ["TRY_MAX_STEPS", "chunk_frame", "frame_line", "try_frames"]
