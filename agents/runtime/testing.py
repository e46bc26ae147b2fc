"""Test helpers: a scripted model that plays back exactly the events you give it.

Use :class:`ScriptedModel` wherever a model goes (``Agent(model=...)``, ``generate(model=...)``,
``prepare_step`` …) to test agents offline and deterministically::

    from agents.runtime import Agent, create_tool
    from agents.runtime.testing import ScriptedModel, text_step, tool_step

    model = ScriptedModel([
        tool_step(("call-1", "weather", {"city": "Lagos"})),   # step 1: the model calls a tool
        text_step("It is sunny in Lagos."),                     # step 2: it answers
    ])
    agent = Agent(id="a", instructions="Be brief.", model=model, tools={"weather": weather})
    result = await agent.generate("Weather in Lagos?")
    assert result.text == "It is sunny in Lagos."
    assert model.requests[1].messages[-1]["role"] == "tool"    # what the model saw in step 2

Each call of ``model.stream(request)`` records ``request`` (a
:class:`~agents.runtime.providers.base.ModelRequest`) in ``model.requests`` and plays the next
scripted step. A step is one of

- a list of model events (dicts, see :mod:`agents.runtime.providers.base`), played in order;
- a callable ``step(request) -> list of events`` (sync or async; it may also return a
  :class:`ScriptedStep` or an exception instance), called with the request at the moment the step
  plays — handy to assert on, or answer from, what the model received;
- an exception instance (e.g. ``ModelError("rate limited", status=429)``): raised when the step
  plays, as a failing provider would;
- a :class:`ScriptedStep` (what :func:`text_step`, :func:`tool_step` and :func:`hang_step` return),
  which adds a per-event ``delay`` (seconds, slept before each event) and ``hang=True`` (after its
  events the step waits forever, like a model that never answers — for abort and timeout tests).

A ``response-metadata`` event whose ``id`` is ``None`` gets ``"<model_id>-<n>"`` (``n`` counts the
model's calls from 1), so response ids are deterministic.

Running out of steps raises :class:`AssertionError` with the number of calls and steps. The agent
loop turns any exception from a model into a run that ends with ``finish_reason == "error"`` (the
exception is in ``result.error``), so check ``result.error`` or call :meth:`ScriptedModel.assert_done`
at the end of a test.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from dataclasses import dataclass, field
from typing import Any, AsyncIterator, Iterable

from .naming import snake_keys
from .providers.base import ModelRequest

__all__ = ["ScriptedModel", "ScriptedStep", "drain_thread_runtime", "hang_step", "make_usage", "text_step",
           "tool_step"]


@dataclass
class ScriptedStep:
    """One scripted model step: ``events`` played in order, each after ``delay`` seconds; with
    ``hang`` the step then waits forever (it never sends ``finish``)."""

    events: list[dict] = field(default_factory=list)
    delay: float = 0.0
    hang: bool = False


def make_usage(usage: Any = None) -> dict:
    """A usage dict in the runtime's snake_case form.

    ``None`` → all zeros; ``(input, output)`` → those counts; a dict (snake_case or camelCase keys)
    → the same counts, with ``total_tokens`` filled in when missing.
    """
    if usage is None:
        return {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0}
    if isinstance(usage, (tuple, list)):
        inp, out = usage
        return {"input_tokens": inp, "output_tokens": out, "total_tokens": inp + out}
    if isinstance(usage, dict):
        data = snake_keys(usage)
        data.setdefault("input_tokens", 0)
        data.setdefault("output_tokens", 0)
        data.setdefault("total_tokens", data["input_tokens"] + data["output_tokens"])
        return data
    raise TypeError(f"usage must be None, (input, output) or a dict, not {type(usage).__name__}")


def _metadata(response_id: str | None, headers: dict | None) -> dict:
    return {"type": "response-metadata", "id": response_id, "model_id": None, "timestamp": None,
            "headers": dict(headers or {})}


def text_step(text: str, *, usage: Any = None, deltas: Iterable[str] | None = None,
              reasoning: str | Iterable[str] | None = None, finish_reason: str = "stop",
              response_id: str | None = None, headers: dict | None = None,
              provider_metadata: dict | None = None, delay: float = 0.0, hang: bool = False) -> ScriptedStep:
    """A step that answers ``text``: response-metadata, text deltas, ``finish`` (reason ``stop``).

    ``deltas`` splits the text into several ``text-delta`` events (they must join to ``text``);
    by default the whole text is one delta, and an empty text sends none. ``reasoning`` (a string or
    a list of deltas) is sent as ``reasoning-delta`` events before the text. ``usage`` is ``None``
    (zeros), ``(input, output)`` or a dict. With ``hang=True`` the step sends its deltas and then
    never finishes.
    """
    if deltas is None:
        parts = [text] if text else []
    else:
        parts = list(deltas)
        if "".join(parts) != text:
            raise ValueError(f"text_step: deltas {parts!r} do not join to {text!r}")
    events: list[dict] = [_metadata(response_id, headers)]
    if reasoning is not None:
        for piece in ([reasoning] if isinstance(reasoning, str) else list(reasoning)):
            events.append({"type": "reasoning-delta", "text": piece})
    events.extend({"type": "text-delta", "text": p} for p in parts)
    if not hang:
        events.append({"type": "finish", "finish_reason": finish_reason, "usage": make_usage(usage),
                       "provider_metadata": dict(provider_metadata or {})})
    return ScriptedStep(events, delay=delay, hang=hang)


def tool_step(*calls: tuple[str, str, Any], usage: Any = None, text: str | None = None,
              response_id: str | None = None, headers: dict | None = None, delay: float = 0.0) -> ScriptedStep:
    """A step in which the model calls tools, then finishes with reason ``tool-calls``.

    Each call is ``(tool_call_id, tool_name, args)``; ``args`` is a dict (sent as JSON text) or a raw
    string sent as it is (use it for malformed JSON). ``text`` is sent as one delta before the calls.
    """
    if not calls:
        raise ValueError("tool_step needs at least one (tool_call_id, tool_name, args) call")
    events: list[dict] = [_metadata(response_id, headers)]
    if text:
        events.append({"type": "text-delta", "text": text})
    for call in calls:
        if len(call) != 3:
            raise ValueError(f"a tool call is (tool_call_id, tool_name, args), not {call!r}")
        cid, name, args = call
        raw = args if isinstance(args, str) else json.dumps(args)
        events.append({"type": "tool-call", "tool_call_id": cid, "tool_name": name, "args_text": raw})
    events.append({"type": "finish", "finish_reason": "tool-calls", "usage": make_usage(usage),
                   "provider_metadata": {}})
    return ScriptedStep(events, delay=delay)


def hang_step(*events: dict, delay: float = 0.0) -> ScriptedStep:
    """A step that sends ``events`` (default: only response-metadata) and then waits forever."""
    return ScriptedStep(list(events) or [_metadata(None, None)], delay=delay, hang=True)


class ScriptedModel:
    """A model that plays scripted steps (see the module docstring) and records its requests."""

    def __init__(self, steps: Iterable[Any] = (), *, provider: str = "test", model_id: str = "scripted"):
        self.provider = provider
        self.model_id = model_id
        self.steps: list[Any] = list(steps)
        self.requests: list[ModelRequest] = []
        self._played = 0

    def __repr__(self) -> str:
        return f"<ScriptedModel {self.provider}/{self.model_id} {self._played}/{len(self.steps)} steps played>"

    def add(self, *steps: Any) -> "ScriptedModel":
        """Append more steps (e.g. between a suspension and its approval)."""
        self.steps.extend(steps)
        return self

    @property
    def calls(self) -> int:
        """How many times ``stream()`` was called."""
        return len(self.requests)

    @property
    def remaining(self) -> int:
        """Steps not played yet."""
        return len(self.steps) - self._played

    def assert_done(self) -> None:
        """Fail unless every scripted step was played."""
        assert self.remaining == 0, (f"{self!r}: {self.remaining} scripted step(s) were never played "
                                     f"(the model was called {self.calls} time(s))")

    async def stream(self, request: ModelRequest) -> AsyncIterator[dict]:
        self.requests.append(request)
        number = len(self.requests)
        if self._played >= len(self.steps):
            raise AssertionError(
                f"ScriptedModel {self.provider}/{self.model_id} ran out of steps: call {number} but only "
                f"{len(self.steps)} step(s) were scripted (last message: "
                f"{(request.messages[-1] if request.messages else None)!r})")
        step = self.steps[self._played]
        self._played += 1
        if isinstance(step, BaseException):
            raise step
        if callable(step) and not isinstance(step, ScriptedStep):
            step = step(request)
            if inspect.isawaitable(step):
                step = await step
        if isinstance(step, BaseException):
            raise step
        if not isinstance(step, ScriptedStep):
            step = ScriptedStep(list(step))
        for event in step.events:
            if step.delay:
                await asyncio.sleep(step.delay)
            event = dict(event)
            if event.get("type") == "response-metadata" and event.get("id") is None:
                event["id"] = f"{self.model_id}-{number}"
            yield event
        if step.hang:
            await asyncio.Event().wait()  # never set: only a cancellation (abort) ends this step



async def drain_thread_runtime(runtime: Any = None, *, timeout: float = 5.0) -> None:
    """Wait until the thread runtime (``runtime``, or this loop's) has no active run and no pending
    background task; fail the test (:class:`AssertionError` naming what is still busy) when that
    takes longer than ``timeout`` seconds. ``ThreadRuntime.drain_background`` itself only reports a
    timeout (False), for shutdown."""
    if runtime is None:
        from .threads import get_thread_runtime

        runtime = get_thread_runtime()
    if not await runtime.drain_background(timeout=timeout):
        raise AssertionError(f"the thread runtime was still busy after {timeout} s: "
                             + "; ".join(runtime.busy_with()))
