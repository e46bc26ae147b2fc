"""The multi-step agent loop: model step → tool calls → next step, as chunks.

One :class:`Run` drives one run id. ``Run.execute()`` is a coroutine that pushes every chunk through
``emit`` (which feeds ``on_chunk``, the output buffer and, for thread runs, the thread stream) and
returns the :class:`GenerateResult`. It never raises for a model, tool or abort failure: those end the
run with finish reason ``error`` or ``abort`` and are recorded; only bugs propagate.

A run suspended on a tool approval stores its state through the run store and can be resumed in
any process with :meth:`Run.resume_state`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
from typing import Any, Callable

from .errors import AbortError, MastraError, ModelError, StructuredOutputError
from .messages import new_id, now_iso
from .providers.base import ModelRequest
from .results import GenerateResult, StepResult, Usage
from .tools import Tool, ToolContext, ToolValidationError, to_jsonable

logger = logging.getLogger(__name__)

FROM = "AGENT"
DECLINED_MESSAGE = "Tool call was not approved by the user"


class TripWire(Exception):
    """Raised by a processor's ``abort(reason)`` to block the run (or retry the step)."""

    def __init__(self, reason: str, *, retry: bool = False, metadata: Any = None, processor_id: str | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry = retry
        self.metadata = metadata
        self.processor_id = processor_id


class Suspend(Exception):
    def __init__(self, call: dict):
        super().__init__("suspended")
        self.call = call


async def maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _parse_args(raw: Any) -> tuple[Any, str | None]:
    if isinstance(raw, dict):
        return raw, None
    if raw is None or raw == "":
        return {}, None
    try:
        value = json.loads(raw)
    except (TypeError, ValueError) as exc:
        return raw, f"the model sent malformed JSON arguments: {exc}"
    if not isinstance(value, dict):
        return value, "tool arguments must be a JSON object"
    return value, None


class Run:
    """State of one run. Built by ``Agent``; see ``Agent._build_run``."""

    def __init__(self, *, agent: Any, run_id: str, model: Any, system: list[dict], messages: list[dict],
                 input_messages: list[dict], tools: dict[str, Tool], tool_descriptions: dict[str, str],
                 options: dict, emit: Callable[[dict], Any], memory: dict | None = None,
                 remembered: list[dict] | None = None, abort_signal: Any = None,
                 request_context: dict | None = None, run_store: Any = None,
                 input_processors: list | None = None, output_processors: list | None = None,
                 max_processor_retries: int = 0, drain_inputs: Callable | None = None,
                 resolve_model: Callable | None = None):
        self.agent = agent
        self.run_id = run_id
        self.model = model
        self.system = system
        self.messages = messages  # the conversation sent to the model (no system messages)
        self.input_messages = input_messages
        self.response_messages: list[dict] = []
        self.tools = tools
        self.tool_descriptions = tool_descriptions
        self.options = options
        self.emit = emit
        self.memory = memory  # {"store", "resource_id", "thread_id", "read_only", "saved_upto"}
        self.remembered = remembered or []
        self.abort_signal = abort_signal
        self.request_context = request_context or {}
        self.run_store = run_store
        self.input_processors = input_processors or []
        self.output_processors = output_processors or []
        self.max_processor_retries = max_processor_retries
        self.drain_inputs = drain_inputs
        #: thread runs: ``settle(messages, record)`` writes the run's end (its unsaved messages, its
        #: record and the thread's lease) in one go, in place of saving memory and recording apart
        self.settle: Callable | None = None
        self.resolve_model = resolve_model
        self.steps: list[StepResult] = []
        self.usage = Usage.zero()
        self.finish_reason = "other"
        self.error: Exception | None = None
        self.tripwire: dict | None = None
        self.suspend_payload: dict | None = None
        self.object: Any = None
        self.started_at = now_iso()
        self.pending_calls: list[dict] = []  # calls of the current step not yet executed
        self.done_results: list[dict] = []  # tool-result parts of the current step
        self.decisions: dict[str, str] = {}  # tool_call_id -> approved | declined
        self.feedback: str | None = None
        self.processor_retries = 0
        self._injected: list[dict] = []
        self.resumed = False
        self.started = False  # set once ``execute`` can take a cancellation (see Agent._execute)

    # -- chunks -------------------------------------------------------------------------------
    def chunk(self, type_: str, payload: dict | None = None) -> dict:
        return {"type": type_, "runId": self.run_id, "from": FROM, "payload": payload if payload is not None else {}}

    async def send(self, chunk: dict) -> None:
        for processor in self.output_processors:
            hook = getattr(processor, "process_output_stream", None)
            if hook is not None:
                chunk = await maybe_await(hook(chunk=chunk, abort=self._processor_abort(processor)))
                if chunk is None:
                    return
        result = self.emit(chunk)
        if result is not None and inspect.isawaitable(result):
            await result

    def _processor_abort(self, processor: Any) -> Callable:
        def abort(reason: str = "blocked", *, retry: bool = False, metadata: Any = None):
            raise TripWire(reason, retry=retry, metadata=metadata, processor_id=getattr(processor, "id", None))
        return abort

    # -- the loop -----------------------------------------------------------------------------
    async def execute(self, *, resuming: bool = False) -> GenerateResult:
        """Run (or, with ``resuming``, continue a suspended run) to its end; return the result."""
        await self.send(self.chunk("start", {"resumed": True} if resuming else {}))
        if self.abort_signal is not None and self.abort_signal.aborted:  # aborted before the run started
            await self._finish_aborted(reason=self.abort_signal.reason)
            return await self._finalize()
        self.started = True
        self.resumed = resuming  # a resumed run updates its stored record, whatever its end
        try:
            if resuming:
                await self._finish_tool_phase()
            else:
                await self._run_input_processors()
                await self._step_with_retries()
            while self.finish_reason != "suspended" and self.steps and self.steps[-1].is_continued:
                await self._step_with_retries()
        except asyncio.CancelledError:
            if self.abort_signal is None or not self.abort_signal.aborted:
                await self._finish_aborted(reason="cancelled")
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await self._finish_aborted(reason=self.abort_signal.reason)
        except AbortError as exc:
            await self._finish_aborted(reason=exc.message)
        except TripWire as trip:
            self.tripwire = {"reason": trip.reason, "retry": trip.retry, "metadata": trip.metadata,
                             "processorId": trip.processor_id}
            self.finish_reason = "other"
            await self.send(self.chunk("tripwire", {"reason": trip.reason, "processorId": trip.processor_id}))
        except MastraError as exc:
            await self._finish_error(exc)
        except Exception as exc:  # a bug in a callback or provider: end the run, keep the process
            logger.exception("run %s failed", self.run_id)
            await self._finish_error(exc)
        return await self._finalize()

    async def _step_with_retries(self) -> None:
        """One model step; a processor's ``abort(reason, retry=True)`` re-runs it with the reason as
        feedback, at most ``max_processor_retries`` times."""
        while True:
            try:
                await self._model_step()
                return
            except TripWire as trip:
                if not trip.retry or self.processor_retries >= self.max_processor_retries:
                    raise
                self.processor_retries += 1
                feedback = {"id": new_id(), "role": "user", "content": trip.reason, "createdAt": now_iso(),
                            "type": "processor-feedback"}
                self.messages.append(feedback)

    async def _continue_after(self, max_steps: int) -> bool:
        """Decide whether another model step runs after the last one (which ended with its tools).

        Inputs delivered into the run (thread signals) are taken here, after the step and its tool
        calls, and force one more step; they are only taken while another step may run, so that
        inputs arriving at the end go to the next run instead of being dropped.
        """
        step = self.steps[-1]
        wants_more = step.finish_reason == "tool-calls" and bool(step.tool_results) and not self._client_calls_pending(step)
        stop = False
        stop_when = self.options.get("stop_when")
        if stop_when is not None:
            conditions = stop_when if isinstance(stop_when, (list, tuple)) else [stop_when]
            ctx = {"steps": self.steps, "run_id": self.run_id}
            for condition in conditions:
                if await maybe_await(condition(ctx)):
                    stop = True
                    break
        hook = self.options.get("on_iteration_complete")
        if hook is not None:
            is_final = stop or not wants_more or len(self.steps) >= max_steps
            decision = await maybe_await(hook({
                "iteration": len(self.steps), "max_iterations": max_steps, "text": step.text,
                "is_final": is_final, "finish_reason": step.finish_reason, "tool_calls": step.tool_calls,
                "messages": self.messages, "run_id": self.run_id,
            }))
            if decision:
                if decision.get("continue") is False:
                    stop = True
                feedback = decision.get("feedback")
                if feedback and not stop and len(self.steps) < max_steps:
                    msg = {"id": new_id(), "role": "user", "content": str(feedback), "createdAt": now_iso(),
                           "type": "feedback"}
                    self.messages.append(msg)
                    self.response_messages.append(msg)
                    wants_more = True
        injected = False
        if not stop and len(self.steps) < max_steps and self.finish_reason != "suspended":
            injected = await self._drain()
        step.is_continued = (wants_more or injected) and not stop and len(self.steps) < max_steps
        return step.is_continued

    def _client_calls_pending(self, step: StepResult) -> bool:
        done = {r["payload"]["toolCallId"] for r in step.tool_results}
        return any(c["payload"]["toolCallId"] not in done for c in step.tool_calls)

    async def _drain(self) -> bool:
        """Take inputs delivered into this run (thread signals) and append them in order."""
        added = False
        if self._injected:
            injected, self._injected = self._injected, []
            for msg in injected:
                self.messages.append(msg)
                self.response_messages.append(msg)
            added = True
        if self.drain_inputs is not None:
            for msg in await self.drain_inputs(self):
                self.messages.append(msg)
                self.response_messages.append(msg)
                added = True
        return added

    async def processor_send_signal(self, signal: dict) -> dict:
        """``send_signal`` given to processors: a reactive signal into this run's next model call.

        Thread runs replace it (``agents.runtime.threads``) to also store and echo the signal."""
        from .signal import create_signal, echo_chunk, render_signal

        created = create_signal({"type": "reactive", **signal})
        created["acceptedAt"] = now_iso()
        await self.send(echo_chunk(created, self.run_id))
        self.inject(render_signal(created))
        return created

    async def _compute_state(self, processor: Any, messages: list[dict], step_number: int) -> None:
        """Ask a state-owning processor for its channel's next state signal (once per model step).

        ``last_snapshot`` / ``deltas_since_snapshot`` come from the context window, else from the
        thread's full history; an update with the cache key and mode already current is skipped.
        """
        from .signal import echo_chunk, render_signal, state_to_signal

        state_id = processor.state_id

        def states(items: list[dict]) -> list[dict]:
            found = []
            for m in items:
                sig = (m.get("metadata") or {}).get("signal")
                if sig and sig.get("type") == "state" and _state_of(sig).get("id") == state_id:
                    found.append(sig)
            return found

        window = states(messages)
        history = window
        if not any(_state_of(s).get("mode") == "snapshot" for s in window) and self.memory is not None:
            stored = await self.memory["store"].list_messages(resource_id=self.memory["resource_id"],
                                                              thread_id=self.memory["thread_id"])
            saved = states(stored)
            ids = {s.get("id") for s in saved}
            # the window's signals already saved are in ``saved``: keep each signal once
            history = saved + [s for s in window if s.get("id") not in ids]
        last_snapshot, deltas = None, []
        for sig in history:
            if _state_of(sig).get("mode") == "snapshot":
                last_snapshot, deltas = sig, []
            elif last_snapshot is not None:
                deltas.append(sig)
        update = await maybe_await(processor.compute_state_signal({
            "state_id": state_id, "last_snapshot": last_snapshot, "deltas_since_snapshot": deltas,
            "active_state_signals": window, "context_window": {"has_snapshot": any(
                _state_of(s).get("mode") == "snapshot" for s in window)},
            "messages": messages, "step_number": step_number, "request_context": self.request_context,
        }))
        if not update:
            return
        signal, tracking = state_to_signal({"id": state_id, **update})
        current = history[-1]["metadata"].get("state", {}) if history else {}
        if current.get("cacheKey") == tracking["cache_key"] and current.get("mode") == tracking["mode"]:
            return
        signal["acceptedAt"] = now_iso()
        await self.send(echo_chunk(signal, self.run_id))
        message = render_signal(signal)
        messages.append(message)
        if messages is not self.messages:
            self.messages.append(message)
        self.response_messages.append(message)

    def inject(self, message: dict) -> None:
        """Queue a message (signal) for the next step of this run (tools use it through context)."""
        self._injected.append(message)

    async def _run_input_processors(self) -> None:
        for processor in self.input_processors:
            hook = getattr(processor, "process_input", None)
            if hook is not None:
                result = await maybe_await(hook(messages=self.messages, abort=self._processor_abort(processor),
                                                request_context=self.request_context))
                if result is not None:
                    self.messages[:] = list(result)

    # -- one model step -----------------------------------------------------------------------
    async def _model_step(self) -> None:
        if self.abort_signal is not None and self.abort_signal.aborted:
            # the cancellation may have been absorbed on the way (e.g. by a sub-agent run that ended
            # aborted on the same signal): never start a step after an abort
            raise AbortError(str(self.abort_signal.reason))
        opts = self.options
        step_number = len(self.steps)
        model = self.model
        tool_choice = opts.get("tool_choice", "auto")
        active = opts.get("active_tools")
        system = self.system
        messages = self.messages
        prepare = opts.get("prepare_step")
        if prepare is not None:
            prepared = await maybe_await(prepare({
                "step_number": step_number, "steps": self.steps, "messages": messages, "model": model,
                "run_id": self.run_id, "request_context": self.request_context,
            })) or {}
            if prepared.get("model") is not None:
                model = self.resolve_model(prepared["model"]) if self.resolve_model else prepared["model"]
            if "tool_choice" in prepared:
                tool_choice = prepared["tool_choice"]
            if "active_tools" in prepared:
                active = prepared["active_tools"]
            if prepared.get("system") is not None:
                from .messages import system_messages
                system = system_messages(prepared["system"], "prepare_step.system")
            if prepared.get("messages") is not None:
                messages = prepared["messages"]
        for processor in self.input_processors:
            hook = getattr(processor, "process_input_step", None)
            if hook is not None:
                result = await maybe_await(hook(
                    messages=messages, step_number=step_number, steps=self.steps,
                    abort=self._processor_abort(processor), request_context=self.request_context,
                    send_signal=self.processor_send_signal, run=self))
                if isinstance(result, list):
                    messages = result
        for processor in self.input_processors:
            if getattr(processor, "compute_state_signal", None) is not None and getattr(processor, "state_id", None):
                await self._compute_state(processor, messages, step_number)
        await self._drain_into(messages)
        names = [n for n in self.tools if active is None or n in active]
        if tool_choice == "none":
            tool_specs = []
        else:
            tool_specs = [self.tools[n].spec(n, self.tool_descriptions.get(n)) for n in names]
        request_messages = system + messages if system else list(messages)
        response_format = self._response_format()
        injection = (opts.get("structured_output") or {}).get("json_prompt_injection")
        if response_format is not None and injection in (True, "system", "inline"):
            request_messages = _inject_json_instruction(request_messages, response_format["schema"],
                                                        inline=injection == "inline")
            response_format = None
        request = ModelRequest(
            messages=request_messages, tools=tool_specs, tool_choice=tool_choice,
            settings=opts.get("model_settings") or {}, provider_options=opts.get("provider_options") or {},
            response_format=response_format, abort_signal=self.abort_signal,
            include_raw=bool(opts.get("include_raw_chunks")),
        )
        message_id = new_id()
        await self.send(self.chunk("step-start", {"messageId": message_id, "stepNumber": step_number}))
        step = StepResult(step_number=step_number)
        step.request = {"body": None}
        text_parts: list[str] = []
        reasoning_parts: list[str] = []
        text_id = reasoning_id = None
        calls: list[dict] = []
        finish = {"finish_reason": "other", "usage": None}
        send = self.send
        async for event in model.stream(request):
            kind = event["type"]
            if kind == "text-delta":
                if reasoning_id is not None:
                    await send(self.chunk("reasoning-end", {"id": reasoning_id}))
                    reasoning_id = None
                if text_id is None:
                    text_id = new_id()
                    await send(self.chunk("text-start", {"id": text_id}))
                text_parts.append(event["text"])
                await send(self.chunk("text-delta", {"id": text_id, "text": event["text"]}))
            elif kind == "tool-call":
                args, problem = _parse_args(event.get("args", event.get("args_text")))
                call = self.chunk("tool-call", {"toolCallId": event["tool_call_id"], "toolName": event["tool_name"],
                                                "args": args})
                if problem:
                    call["payload"]["argsError"] = problem
                calls.append(call)
                await send(call)
            elif kind == "reasoning-delta":
                if reasoning_id is None:
                    reasoning_id = new_id()
                    await send(self.chunk("reasoning-start", {"id": reasoning_id}))
                reasoning_parts.append(event["text"])
                await send(self.chunk("reasoning-delta", {"id": reasoning_id, "text": event["text"]}))
            elif kind == "finish":
                finish = event
            elif kind == "response-metadata":
                step.response = {"id": event.get("id"), "timestamp": event.get("timestamp") or now_iso(),
                                 "modelId": event.get("model_id") or getattr(model, "model_id", None),
                                 "headers": event.get("headers") or {}}
                await send(self.chunk("response-metadata", dict(step.response)))
            elif kind == "request":
                step.request = {"body": event.get("body")}
            elif kind == "source":
                src = self.chunk("source", {k: v for k, v in event.items() if k != "type"})
                step.sources.append(src)
                await send(src)
            elif kind == "file":
                f = self.chunk("file", {k: v for k, v in event.items() if k != "type"})
                step.files.append(f)
                await send(f)
            elif kind == "warning":
                step.warnings.append({k: v for k, v in event.items() if k != "type"})
            elif kind == "raw":
                if request.include_raw:
                    await send(self.chunk("raw", {"rawValue": event.get("raw_value")}))
        if reasoning_id is not None:
            await send(self.chunk("reasoning-end", {"id": reasoning_id}))
        if text_id is not None:
            await send(self.chunk("text-end", {"id": text_id}))
        step.text = "".join(text_parts)
        step.reasoning_text = "".join(reasoning_parts)
        if reasoning_parts:
            step.reasoning = [self.chunk("reasoning", {"text": step.reasoning_text})]
        step.tool_calls = calls
        step.finish_reason = finish.get("finish_reason") or "other"
        if calls and step.finish_reason == "stop":
            step.finish_reason = "tool-calls"
        step.usage = Usage(finish.get("usage") or Usage.zero())
        step.provider_metadata = finish.get("provider_metadata") or {}
        self.usage.add(step.usage)
        content: list[dict] = []
        if step.reasoning_text:
            content.append({"type": "reasoning", "text": step.reasoning_text})
        if step.text:
            content.append({"type": "text", "text": step.text})
        for c in calls:
            p = c["payload"]
            content.append({"type": "tool-call", "toolCallId": p["toolCallId"], "toolName": p["toolName"],
                            "args": p["args"]})
        if content:
            msg = {"id": message_id, "role": "assistant", "content": content, "createdAt": now_iso()}
            self.messages.append(msg)
            self.response_messages.append(msg)
        step.response["messages"] = [self.response_messages[-1]] if content else []
        self.steps.append(step)
        if calls:
            self.pending_calls = list(calls)
            self.done_results = []
            await self._finish_tool_phase()
        else:
            await self._end_step(step)

    def _response_format(self) -> dict | None:
        structured = self.options.get("structured_output")
        if not structured or structured.get("model") is not None:
            return None
        return {"type": "json", "schema": self._structured_schema().json_schema, "name": "response"}

    def _structured_schema(self):
        from .tools import Schema
        structured = self.options["structured_output"]
        if "_schema" not in structured:
            structured["_schema"] = Schema(structured["schema"], field_name="options.structured_output.schema")
        return structured["_schema"]

    async def _drain_into(self, messages: list[dict]) -> None:
        # before the run's first model call, also take thread inputs delivered since the run was
        # started (e.g. by a process that lost the race to wake the thread): this call answers them
        first = not self.steps and self.drain_inputs is not None
        if not self._injected and not first:
            return
        before = len(self.messages)
        await self._drain()
        if messages is not self.messages:
            messages.extend(self.messages[before:])

    # -- tools --------------------------------------------------------------------------------
    def _needs_approval(self, call: dict) -> bool:
        name = call["payload"]["toolName"]
        tool = self.tools.get(name)
        if call["payload"].get("argsError") or tool is None:
            return False
        return bool(self.options.get("require_tool_approval")) or tool.require_approval

    async def _finish_tool_phase(self) -> None:
        """Execute the pending calls of the last step (may suspend), then end the step."""
        step = self.steps[-1]
        pending = self.pending_calls
        concurrency = self.options.get("tool_call_concurrency")
        if concurrency is None:
            may_approve = bool(self.options.get("require_tool_approval")) or any(t.require_approval for t in self.tools.values())
            concurrency = 1 if may_approve else 10
        while pending:
            call = pending[0]
            cid = call["payload"]["toolCallId"]
            if self._needs_approval(call) and cid not in self.decisions:
                await self._suspend(call)
                return
            if concurrency == 1 or len(pending) == 1:
                pending.pop(0)
                await self._run_call(call, step)
                continue
            batch = []
            while pending and len(batch) < concurrency:
                c = pending[0]
                if self._needs_approval(c) and c["payload"]["toolCallId"] not in self.decisions:
                    break
                batch.append(pending.pop(0))
            await asyncio.gather(*(self._run_call(c, step) for c in batch))
        if self.done_results:
            msg = {"id": new_id(), "role": "tool", "content": self._ordered_results(step), "createdAt": now_iso()}
            self.messages.append(msg)
            self.response_messages.append(msg)
            self.done_results = []
        await self._end_step(step)

    def _ordered_results(self, step: StepResult) -> list[dict]:
        order = {c["payload"]["toolCallId"]: i for i, c in enumerate(step.tool_calls)}
        return sorted(self.done_results, key=lambda p: order.get(p["toolCallId"], 0))

    async def _suspend(self, call: dict) -> None:
        p = call["payload"]
        self.finish_reason = "suspended"
        self.steps[-1].finish_reason = "suspended"
        self.suspend_payload = {"tool_call_id": p["toolCallId"], "tool_name": p["toolName"], "args": p["args"]}
        await self.send(self.chunk("tool-call-approval", {"toolCallId": p["toolCallId"], "toolName": p["toolName"],
                                                          "args": p["args"]}))
        # save the thread's messages now, so that the stored state knows they are saved (``saved_upto``)
        # and the resumed run does not save them a second time
        await self._save_memory()
        if self.run_store is not None:
            await self.run_store.save_suspended(run_id=self.run_id, agent_id=getattr(self.agent, "id", None),
                                                tool_call_id=p["toolCallId"], tool_name=p["toolName"],
                                                args=p["args"], state=self.to_state())

    async def _run_call(self, call: dict, step: StepResult) -> None:
        p = call["payload"]
        cid, name, args = p["toolCallId"], p["toolName"], p["args"]
        tool = self.tools.get(name)
        decision = self.decisions.get(cid)
        if decision == "declined":
            await self._record_result(step, cid, name, DECLINED_MESSAGE, is_error=True, declined=True)
            return
        if p.get("argsError"):
            await self._record_error(step, cid, name, p["argsError"])
            return
        if tool is None:
            await self._record_error(step, cid, name, f"unknown tool {name!r}; available: {', '.join(self.tools) or 'none'}")
            return
        if tool.execute is None:  # client tool: the caller runs it; the run ends with tool-calls
            return
        hooks = self.options.get("hooks") or {}
        agent_hooks = getattr(self.agent, "hooks", None) or {}
        before = hooks.get("before_tool_call", agent_hooks.get("before_tool_call"))
        after = hooks.get("after_tool_call", agent_hooks.get("after_tool_call"))
        context = ToolContext(run_id=self.run_id, tool_call_id=cid, agent_id=getattr(self.agent, "id", None),
                              thread_id=self.memory and self.memory.get("thread_id"),
                              resource_id=self.memory and self.memory.get("resource_id"),
                              request_context=self.request_context, abort_signal=self.abort_signal,
                              agent=self.agent, send_signal=self.processor_send_signal)
        meta = {"agent_id": getattr(self.agent, "id", None), "agent_name": getattr(self.agent, "name", None)}
        if before is not None:
            verdict = await maybe_await(before({"tool_name": name, "input": args, "context": context, "metadata": meta}))
            if isinstance(verdict, dict) and verdict.get("proceed") is False:
                output = to_jsonable(verdict.get("output"))
                await self._record_result(step, cid, name, output)
                return
        try:
            output = await tool.run(args, context)
        except (asyncio.CancelledError, AbortError):
            raise
        except ToolValidationError as exc:
            message = f"invalid arguments for tool {name!r}: {exc}" if "output" not in str(exc)[:6] else str(exc)
            if after is not None:
                await maybe_await(after({"tool_name": name, "input": args, "context": context, "metadata": meta,
                                         "output": None, "error": exc}))
            await self._record_error(step, cid, name, message)
            return
        except Exception as exc:
            if after is not None:
                await maybe_await(after({"tool_name": name, "input": args, "context": context, "metadata": meta,
                                         "output": None, "error": exc}))
            await self._record_error(step, cid, name, f"{type(exc).__name__}: {exc}")
            return
        if after is not None:
            await maybe_await(after({"tool_name": name, "input": args, "context": context, "metadata": meta,
                                     "output": output, "error": None}))
        await self._record_result(step, cid, name, output)

    async def _record_result(self, step: StepResult, cid: str, name: str, result: Any, *, is_error: bool = False,
                             declined: bool = False) -> None:
        payload = {"toolCallId": cid, "toolName": name, "result": result}
        if is_error:
            payload["isError"] = True
        chunk = self.chunk("tool-result", payload)
        step.tool_results.append(chunk)
        part = {"type": "tool-result", "toolCallId": cid, "toolName": name, "result": result}
        if is_error:
            part["isError"] = True
        self.done_results.append(part)
        await self.send(chunk)

    async def _record_error(self, step: StepResult, cid: str, name: str, message: str) -> None:
        await self.send(self.chunk("tool-error", {"toolCallId": cid, "toolName": name, "error": message}))
        result = {"error": message}
        step.tool_results.append(self.chunk("tool-result", {"toolCallId": cid, "toolName": name, "result": result,
                                                            "isError": True}))
        self.done_results.append({"type": "tool-result", "toolCallId": cid, "toolName": name, "result": result,
                                  "isError": True})

    async def _end_step(self, step: StepResult) -> None:
        """Settle whether the run goes on (``is_continued``), then send ``step-finish``."""
        more = await self._continue_after(self.options.get("max_steps") or 5)
        await self.send(self.chunk("step-finish", {
            "stepResult": {"reason": step.finish_reason, "isContinued": more},
            "output": {"usage": step.usage.camel()},
            "metadata": {"request": step.request, "response": {k: v for k, v in step.response.items() if k != "messages"}},
            "messageId": step.response.get("id"),
        }))
        callback = self.options.get("on_step_finish")
        if callback is not None:
            await maybe_await(callback(step))
        if self.options.get("save_per_step"):
            await self._save_memory()

    # -- ends ---------------------------------------------------------------------------------
    async def _finish_error(self, exc: Exception) -> None:
        self.error = exc
        self.finish_reason = "error"
        err = {"message": str(exc), "code": getattr(exc, "code", "error")}
        if isinstance(exc, ModelError) and exc.status is not None:
            err["status"] = exc.status
        await self.send(self.chunk("error", {"error": err}))
        callback = self.options.get("on_error")
        if callback is not None:
            await maybe_await(callback({"error": exc}))

    async def _finish_aborted(self, reason: Any) -> None:
        self.finish_reason = "abort"
        await self.send(self.chunk("abort", {"reason": str(reason) if reason is not None else None}))
        callback = self.options.get("on_abort")
        if callback is not None:
            await maybe_await(callback({"reason": reason, "run_id": self.run_id}))

    async def _structure(self, text: str) -> None:
        structured = self.options.get("structured_output")
        if not structured or self.finish_reason in ("error", "abort", "suspended"):
            return
        schema = self._structured_schema()
        if structured.get("model") is not None:
            text = await self._structuring_call(structured, schema)
        strategy = structured.get("error_strategy", "strict")
        try:
            value = json.loads(_strip_fences(text))
            value = schema.validate(value)
            self.object = to_jsonable(value)
        except (ValueError, ToolValidationError) as exc:
            problem = f"structured output does not match the schema: {exc}"
            if strategy == "fallback":
                self.object = structured.get("fallback_value")
            elif strategy == "warn":
                logger.warning("run %s: %s", self.run_id, problem)
                self.steps[-1].warnings.append({"type": "structured-output", "message": problem})
            else:
                raise StructuredOutputError(problem) from None
        await self.send(self.chunk("object-result", {"object": self.object}))

    async def _structuring_call(self, structured: dict, schema) -> str:
        model = self.resolve_model(structured["model"]) if self.resolve_model else structured["model"]
        instructions = structured.get("instructions") or (
            "Extract the answer from the conversation as JSON matching the schema. Answer with JSON only.")
        transcript = "\n".join(
            f"{m['role']}: {m['content'] if isinstance(m['content'], str) else json.dumps(m['content'], default=str)}"
            for m in self.messages)
        request = ModelRequest(
            messages=[{"role": "system", "content": instructions},
                      {"role": "user", "content": transcript}],
            response_format={"type": "json", "schema": schema.json_schema, "name": "response"},
            provider_options=structured.get("provider_options") or {}, abort_signal=self.abort_signal)
        parts = []
        async for event in model.stream(request):
            if event["type"] == "text-delta":
                parts.append(event["text"])
            elif event["type"] == "finish":
                self.usage.add(event.get("usage"))
        return "".join(parts)

    async def _finalize(self) -> GenerateResult:
        text = self.steps[-1].text if self.steps else ""
        if self.finish_reason not in ("error", "abort", "suspended") and self.tripwire is None:
            self.finish_reason = self.steps[-1].finish_reason if self.steps else "other"
            try:
                await self._structure("".join(s.text for s in self.steps[-1:]))
            except StructuredOutputError as exc:
                await self._finish_error(exc)
        if self.finish_reason != "suspended":
            for processor in self.output_processors:
                hook = getattr(processor, "process_output_result", None)
                if hook is not None:
                    try:
                        changed = await maybe_await(hook(messages=self.response_messages, text=text,
                                                         abort=self._processor_abort(processor)))
                        if isinstance(changed, str):
                            text = changed
                    except TripWire as trip:
                        self.tripwire = {"reason": trip.reason, "retry": trip.retry, "metadata": trip.metadata,
                                         "processorId": trip.processor_id}
                        await self.send(self.chunk("tripwire", {"reason": trip.reason}))
        settle = self.settle if self.finish_reason != "suspended" else None
        save = not self.options.get("save_per_step") or self.finish_reason in ("error", "abort")
        if save and settle is None:
            await self._save_memory()
        result = self.result(text)
        await self.send(self.chunk("finish", {
            "stepResult": {"reason": self.finish_reason},
            "output": {"usage": self.usage.camel()},
            "metadata": {"request": result.request, "response": {k: v for k, v in result.response.items() if k != "messages"}},
        }))
        if settle is not None:
            # a thread run: its messages, its record and the thread's lease in one write; the
            # finish chunk reaches the thread's subscribers after it
            unsaved = self._unsaved_messages() if save else []
            await settle(unsaved, self._record_dict())
            if self.memory is not None:
                self.memory["saved_upto"] = self.memory.get("saved_upto", 0) + len(unsaved)
        else:
            await self._record()
        callback = self.options.get("on_finish")
        if callback is not None:
            try:
                await maybe_await(callback(result))
            except Exception:
                logger.exception("on_finish of run %s raised", self.run_id)
        return result

    def result(self, text: str) -> GenerateResult:
        last = self.steps[-1] if self.steps else None
        all_calls = [c for s in self.steps for c in s.tool_calls]
        all_results = [r for s in self.steps for r in s.tool_results]
        return GenerateResult(
            run_id=self.run_id, text=text, object=self.object, tool_calls=all_calls, tool_results=all_results,
            usage=Usage(self.usage), total_usage=Usage(self.usage), steps=self.steps,
            finish_reason=self.finish_reason, response=dict(last.response) if last else {},
            request=dict(last.request) if last else {}, warnings=[w for s in self.steps for w in s.warnings],
            provider_metadata=last.provider_metadata if last else {},
            reasoning=[r for s in self.steps for r in s.reasoning],
            reasoning_text="".join(s.reasoning_text for s in self.steps),
            sources=[x for s in self.steps for x in s.sources], files=[x for s in self.steps for x in s.files],
            suspend_payload=self.suspend_payload,
            messages=self.remembered + self.input_messages + self.response_messages,
            remembered_messages=self.remembered, error=self.error, tripwire=self.tripwire,
        )

    def _unsaved_messages(self) -> list[dict]:
        mem = self.memory
        if not mem or mem.get("read_only"):
            return []
        return (self.input_messages + self.response_messages)[mem.get("saved_upto", 0):]

    async def _save_memory(self) -> None:
        mem = self.memory
        pending = self._unsaved_messages()
        if not pending:
            return
        await mem["store"].save_messages(resource_id=mem["resource_id"], thread_id=mem["thread_id"],
                                         messages=pending)
        mem["saved_upto"] = mem.get("saved_upto", 0) + len(pending)

    async def _record(self) -> None:
        """Store the run record: always for thread runs, otherwise for runs that did not end well."""
        if self.run_store is None:
            return
        if self.memory is None and self.finish_reason not in ("error", "abort", "suspended") and not self.resumed:
            return
        try:
            await self.run_store.record_run(self._record_dict())
        except Exception:
            logger.exception("could not record run %s", self.run_id)

    def _record_dict(self) -> dict:
        return {
            "id": self.run_id, "agent_id": getattr(self.agent, "id", None),
            "resource_id": self.memory and self.memory.get("resource_id"),
            "thread_id": self.memory and self.memory.get("thread_id"),
            "status": {"suspended": "suspended", "error": "failed", "abort": "aborted"}.get(self.finish_reason, "completed"),
            "finish_reason": self.finish_reason, "usage": dict(self.usage),
            "error": str(self.error) if self.error else None, "started_at": self.started_at,
            "finished_at": now_iso(), "steps": len(self.steps),
        }

    # -- suspended state ----------------------------------------------------------------------
    def to_state(self) -> dict:
        """JSON-safe state of a suspended run (what a resume in another process needs)."""
        opts = {k: v for k, v in self.options.items() if _jsonable_option(k, v)}
        return {
            "run_id": self.run_id, "messages": self.messages, "input_messages": self.input_messages,
            "response_messages": self.response_messages, "steps": [s.to_state() for s in self.steps],
            "usage": dict(self.usage), "pending_calls": self.pending_calls, "done_results": self.done_results,
            "decisions": self.decisions, "options": opts, "remembered": self.remembered,
            # JSON-safe: no store, no callback, no title setting (it may hold a model object; the title
            # generation already started when the run suspended, so the resumed run must not start another)
            "memory": {k: v for k, v in (self.memory or {}).items()
                       if k not in ("store", "on_title_generated", "generate_title")} or None,
            "request_context": self.request_context, "started_at": self.started_at,
        }

    def load_state(self, state: dict) -> None:
        self.messages = state["messages"]
        self.input_messages = state["input_messages"]
        self.response_messages = state["response_messages"]
        self.steps = [StepResult.from_state(s) for s in state["steps"]]
        if self.steps and self.steps[-1].finish_reason == "suspended":
            self.steps[-1].finish_reason = "tool-calls"
        self.usage = Usage(state["usage"])
        self.pending_calls = state["pending_calls"]
        self.done_results = state["done_results"]
        self.decisions = dict(state["decisions"])
        self.remembered = state.get("remembered") or []
        self.started_at = state.get("started_at") or self.started_at


_JSON_OPTIONS = frozenset({"max_steps", "require_tool_approval", "tool_call_concurrency", "model_settings",
                           "tool_choice", "active_tools", "provider_options", "save_per_step",
                           "include_raw_chunks", "instructions", "system"})


def _jsonable_option(name: str, value: Any) -> bool:
    if name not in _JSON_OPTIONS:
        return False
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _inject_json_instruction(messages: list[dict], schema: dict, *, inline: bool) -> list[dict]:
    """``structured_output.json_prompt_injection``: put the schema in the prompt instead of sending a
    native response format — in a system message after the instructions (``True``/``"system"``) or
    appended to the last user message (``"inline"``). Only the request changes, not the stored messages."""
    text = (f"JSON schema:\n{json.dumps(schema)}\n"
            "You MUST answer with a JSON object that matches the JSON schema above.")
    if inline:
        for i in range(len(messages) - 1, -1, -1):
            message = messages[i]
            if message["role"] == "user":
                content = message["content"]
                content = (content + "\n\n" + text if isinstance(content, str)
                           else list(content) + [{"type": "text", "text": text}])
                return messages[:i] + [{**message, "content": content}] + messages[i + 1:]
    leading = 0
    while leading < len(messages) and messages[leading]["role"] == "system":
        leading += 1
    return messages[:leading] + [{"role": "system", "content": text}] + messages[leading:]


def _strip_fences(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return stripped


def _state_of(signal: dict) -> dict:
    """A state signal's tracking data (``metadata.state``: id, cache key, mode)."""
    return (signal.get("metadata") or {}).get("state") or {}
