"""The run's state and its loop: model step → tool calls → next step, as chunks.

One :class:`Run` drives one run id. ``Run.execute()`` is a coroutine that pushes every chunk through
``emit`` (which feeds ``on_chunk``, the output buffer and, for thread runs, the thread stream) and
returns the :class:`GenerateResult`. It never raises for a model, tool or abort failure: those end the
run with finish reason ``error`` or ``abort`` and are recorded; only bugs propagate.

The jobs of a run live beside it: the model step (``step``), the tool phase (``tool_phase``),
structured output (``structured``), the run's end (``ending``), its suspended state (``resume_state``) and
tools that suspend themselves (``tool_suspension``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Callable

from ..chunks import chunk as make_chunk
from ..errors import AbortError, MastraError, ModelError
from ..messages import new_id, now_iso
from ..redaction import redact_text
from ..providers.chain import ChainEntry
from ..results import GenerateResult, StepResult, Usage
from ..scoring import task_completion_check
from ..signal import create_signal, echo_chunk, render_signal
from ..tools import Tool
from .. import transforms
from ..logcontext import enter_run, leave_run
from . import ending, processing, resume_state, spending, step, tool_phase
from .hooks import ThreadHooks, TripWire, maybe_await
from .payloads import chunk_metadata

logger = logging.getLogger(__name__)

DEFAULT_MAX_STEPS = 5


def _discard(chunk: dict) -> None:
    return None


class Run:
    """State of one run. Built by ``Agent`` with everything it needs (nothing is set on it later).

    ``hooks`` makes it a thread run; ``suspended`` (a state from :func:`resume_state.to_state`, with the
    caller's decision in ``decisions``) makes it the continuation of a run suspended on an approval.
    """

    def __init__(self, *, agent: Any, run_id: str, model: Any, system: list[dict], messages: list[dict],
                 input_messages: list[dict], tools: dict[str, Tool], tool_descriptions: dict[str, str],
                 options: dict, emit: Callable[[dict], Any] | None, memory: dict | None = None,
                 remembered: list[dict] | None = None, abort_signal: Any = None,
                 request_context: dict | None = None, run_store: Any = None,
                 input_processors: list | None = None, output_processors: list | None = None,
                 max_processor_retries: int = 0, resolve_model: Callable | None = None,
                 hooks: ThreadHooks | None = None, suspended_state: dict | None = None,
                 resumable: list[dict] | None = None, scorers: dict | None = None, span: Any = None,
                 chain: tuple[ChainEntry, ...] | None = None, policy: Any = None, budgets: tuple = (),
                 editor_version: str | None = None, started_at: str | None = None):
        self.agent = agent
        self.editor_version = editor_version  # the stored version the run's definition comes from
        self.run_id = run_id
        self.model = model  # the first enabled model of the chain (titles, prepare_step's "model")
        #: the models a step may ask, in order (``model_call``); one entry for a run of one model
        self.chain = chain or (ChainEntry(model=model, single=True),)
        self.chain_index = 0  # the entry that answered the last step: the next step starts there
        self.system = system
        self.messages = messages  # the conversation sent to the model (no system messages)
        self.input_messages = input_messages
        self.response_messages: list[dict] = []
        self.tools = tools
        self.tool_descriptions = tool_descriptions
        self.options = options
        self.emit = emit or _discard
        self.memory = memory  # {"store", "resource_id", "thread_id", "read_only", "saved_upto"}
        self.remembered = remembered or []
        self.abort_signal = abort_signal
        self.request_context = request_context or {}
        self.run_store = run_store
        self.input_processors = input_processors or []
        self.output_processors = output_processors or []
        self.max_processor_retries = max_processor_retries
        self.resolve_model = resolve_model
        self.hooks = hooks
        self.steps: list[StepResult] = []
        self.usage = Usage.zero()
        self.finish_reason = "other"
        self.error: Exception | None = None
        self.tripwire: dict | None = None
        self.suspend_payload: dict | None = None
        self.object: Any = None
        self.used_fallback_value = False  # ``object`` is the structured output's fallback value
        self.started_at = started_at or now_iso()  # the stamp of its input messages, when built with them
        self.pending_calls: list[dict] = []  # calls of the current step not yet executed
        self.done_results: list[dict] = []  # tool-result parts of the current step
        self.decisions: dict[str, str] = {}  # tool_call_id -> approved | declined
        self.processor_retries = 0
        self.processor_states: dict[int, dict] = {}  # each processor's ``state`` for this run
        self.stop_requested = False  # no model step after the current one (a delegation's bail)
        self.after_tools: list[dict] = []  # messages for memory after the step's tool results
        self.suspended_calls: list[tuple[dict, Any]] = []  # (call, payload) of tools that suspended
        self.suspension: dict | None = None  # the call this run is suspended on (a tool's own suspend)
        self.resume_data: dict[str, Any] = {}  # tool_call_id -> data the caller resumed it with
        self.resumable = resumable or []  # suspended calls of the thread this run may auto-resume
        self.scorers = scorers or {}  # {key: {"scorer", "sampling"}} scored after the run
        self.transforming = transforms.transforming(self)
        self.stream_failed = False  # a stream processor failed (``processing.stream_out``)
        self.displayed: dict[tuple[str, Any], dict] = {}  # what display transforms showed (``display_chunk``)
        #: nobody sees this run's chunks (``generate`` without ``on_chunk``, no output processor
        #: that reads the stream, no display transform): the run skips making them; what a chunk
        #: carries that the result needs (a step's tool calls and results) is still made
        self.silent = emit is None and not self.output_processors and not self.transforming
        self.span = span  # the run's root span (``agents.runtime.tracing``); None for a bare Run
        self.injected: list[dict] = []  # messages for the next step (signals sent during the run)
        #: the site's run policy (``agents.runtime.run_policy``; None: no budget or limit) and budgets in code
        self.policy = policy
        self.budgets = budgets
        self.policy_ended = False  # the policy's ``run_end`` was called
        self.notices: list[dict] = []  # notice entries for the thread (a soft budget spent), saved with the run
        self.resumed = False
        self.started = False  # set once ``execute`` can take a cancellation (see Agent._execute)
        if suspended_state is not None:
            resume_state.load_state(self, suspended_state)

    # -- chunks -------------------------------------------------------------------------------
    def chunk(self, type_: str, payload: dict | None = None) -> dict:
        return make_chunk(type_, self.run_id, payload)

    async def send(self, chunk: dict) -> None:
        if self.silent:  # the chunk sites that build a payload only for it skip even building it
            return
        if self.transforming:  # displays see the transformed tool payloads, the run the real ones
            chunk = await transforms.display_chunk(self, chunk)
        chunks = await processing.stream_out(self, chunk) if self.output_processors else [chunk]
        for item in chunks:
            result = self.emit(item)
            if result is not None and inspect.isawaitable(result):
                await result

    # -- the loop -----------------------------------------------------------------------------
    async def execute(self, *, resuming: bool = False) -> GenerateResult:
        """Run (or, with ``resuming``, continue a suspended run) to its end; return the result. Log
        lines written meanwhile carry the run id and thread id (``agents.runtime.logcontext``)."""
        token = enter_run(self.run_id, (self.memory or {}).get("thread_id"))
        try:
            return await self._execute(resuming)
        finally:
            await spending.spend_end(self)
            leave_run(token)

    async def _execute(self, resuming: bool) -> GenerateResult:
        try:
            if not self.silent:
                await self.send(self.chunk("start", {"resumed": True} if resuming else {}))
            if self.hooks is not None and not resuming:
                for echo in self.hooks.echoes:  # the inputs this thread run answers
                    await self.send(echo)
        except Exception as exc:  # an output processor or a callback (``on_chunk``) on the first chunks
            return await ending.end_at_start(self, exc)
        if self.abort_signal is not None and self.abort_signal.aborted:  # aborted before the run started
            await self.finish_aborted(reason=self.abort_signal.reason)
            return await ending.finalize(self)
        self.started = True
        self.resumed = resuming  # a resumed run updates its stored record, whatever its end
        try:
            if resuming:
                await tool_phase.finish_tool_phase(self)
            else:
                await processing.input_run(self)
                await self.step_with_retries()
            while self.finish_reason != "suspended" and self.steps and self.steps[-1].is_continued:
                await self.step_with_retries()
        except asyncio.CancelledError:
            if self.abort_signal is None or not self.abort_signal.aborted:
                await self.finish_aborted(reason="cancelled")
                raise
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            await self.finish_aborted(reason=self.abort_signal.reason)
        except AbortError as exc:
            await self.finish_aborted(reason=exc.message)
        except TripWire as trip:
            self.finish_reason = "other"
            await processing.tripwire_record(self, trip)
        except MastraError as exc:
            await self.finish_error(exc)
        except Exception as exc:  # a bug in a callback or provider: end the run, keep the process
            logger.exception("run %s failed", self.run_id)
            await self.finish_error(exc)
        return await ending.finalize(self)

    async def step_with_retries(self) -> None:
        """One model step; a processor's ``abort(reason, retry=True)`` re-runs it with the reason as
        feedback, at most ``max_processor_retries`` times."""
        while True:
            try:
                await step.model_step(self)
                return
            except TripWire as trip:
                if not trip.retry or self.processor_retries >= self.max_processor_retries:
                    raise
                self.processor_retries += 1
                self.messages.append({"id": new_id(), "role": "user", "content": trip.reason,
                                      "createdAt": now_iso(), "type": "processor-feedback"})

    async def end_step(self, step_result: StepResult) -> None:
        """Settle whether the run goes on (``is_continued``), then send ``step-finish``.

        A step after which delivered input was taken in ends ``{reason: "other", isContinued: true}``
        (Mastra's signal drain), whatever the model's own finish reason was."""
        more, took_input = await self.continue_after(self.options.get("max_steps") or DEFAULT_MAX_STEPS)
        if took_input:
            step_result.finish_reason = "other"
        if not self.silent:
            await self.send_step_finish(step_result, more)
        callback = self.options.get("on_step_finish")
        if callback is not None:
            await maybe_await(callback(step_result))
        if self.options.get("save_per_step"):
            await ending.save_memory(self)

    async def send_step_finish(self, step_result: StepResult, more: bool) -> None:
        await self.send(self.chunk("step-finish", {
            "stepResult": {"reason": step_result.finish_reason, "isContinued": more},
            "output": {"usage": step_result.usage.camel()},
            "metadata": chunk_metadata(step_result.request, step_result.response),
            "messageId": step_result.message_id,
        }))

    async def continue_after(self, max_steps: int) -> tuple[bool, bool]:
        """Decide whether another model step runs after the last one (which ended with its tools);
        returns ``(continues, took_input)``.

        Inputs delivered into the run (thread signals) are taken here, after the step and its tool
        calls, and force one more step; they are only taken while another step may run, so that
        inputs arriving at the end go to the next run instead of being dropped.
        """
        last = self.steps[-1]
        wants_more = (last.finish_reason == "tool-calls" and bool(last.tool_results)
                      and not tool_phase.client_calls_pending(last))
        stop = self.stop_requested
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
                "iteration": len(self.steps), "max_iterations": max_steps, "text": last.text,
                "is_final": is_final, "finish_reason": last.finish_reason, "tool_calls": last.tool_calls,
                "messages": self.messages, "run_id": self.run_id,
            }))
            if decision:
                if decision.get("continue") is False:
                    stop = True
                feedback = decision.get("feedback")
                if feedback and not stop and len(self.steps) < max_steps:
                    self.add_message({"id": new_id(), "role": "user", "content": str(feedback),
                                      "createdAt": now_iso(), "type": "feedback"})
                    wants_more = True
        took_input = False
        if not stop and len(self.steps) < max_steps and self.finish_reason != "suspended":
            took_input = await self.take_inputs()
        last.is_continued = (wants_more or took_input) and not stop and len(self.steps) < max_steps
        if (not last.is_continued and not stop and self.options.get("is_task_complete")
                and self.finish_reason != "suspended" and not tool_phase.client_calls_pending(last)):
            last.is_continued = await task_completion_check(self, max_steps)
        return last.is_continued, took_input

    def request_stop(self) -> None:
        """End the run after the current step and its tools (``bail()`` of a delegation)."""
        self.stop_requested = True

    def remember_after_tools(self, message: dict) -> None:
        """Keep ``message`` for memory after the current step's tool results (not shown to the
        model in this run)."""
        self.after_tools.append(message)

    def add_message(self, message: dict) -> None:
        """A message of this run: sent to the model from the next step on and kept in the response."""
        self.messages.append(message)
        self.response_messages.append(message)

    # -- input delivered into the run ---------------------------------------------------------
    async def take_inputs(self) -> bool:
        """Take the inputs delivered into this run (signals sent during the run, then thread inputs)
        and append them in order; True when one of them is for the model."""
        added = False
        if self.injected:
            injected, self.injected = self.injected, []
            for message in injected:
                self.add_message(message)
            added = True
        if self.hooks is not None:
            for item in await self.hooks.take_inputs():
                signal = item["signal"]
                await self.send(echo_chunk(signal, self.run_id))
                if item["kind"] == "echo":  # persisted: into the history in order, not to the model
                    self.response_messages.append(render_signal(signal))
                else:
                    self.add_message(render_signal(signal))
                    added = True
        return added

    async def take_inputs_into(self, messages: list[dict]) -> None:
        """Before a model call: take signals sent since the last step into ``messages`` (the step's
        view of the conversation). Before a thread run's first call, also take the thread inputs
        delivered since the run was started (e.g. by a process that lost the race to wake the
        thread): this call answers them."""
        first = not self.steps and self.hooks is not None
        if not self.injected and not first:
            return
        before = len(self.messages)
        await self.take_inputs()
        if messages is not self.messages:
            messages.extend(self.messages[before:])

    async def send_signal(self, signal: dict) -> dict:
        """``send_signal`` given to processors and tools: a reactive signal into this run's next model
        call, echoed on the run's stream (and so on its thread's)."""
        created = create_signal({"type": "reactive", **signal})
        created["acceptedAt"] = now_iso()
        await self.send(echo_chunk(created, self.run_id))
        self.inject(render_signal(created))
        return created

    def inject(self, message: dict) -> None:
        """Queue a message (signal) for the next step of this run."""
        self.injected.append(message)

    # -- ends ---------------------------------------------------------------------------------
    async def finish_error(self, exc: Exception) -> None:
        self.error = exc
        self.finish_reason = "error"
        err = {"message": redact_text(str(exc)), "code": getattr(exc, "code", "error")}
        if isinstance(exc, ModelError) and exc.status is not None:
            err["status"] = exc.status
        await self.send(self.chunk("error", {"error": err}))
        callback = self.options.get("on_error")
        if callback is not None:
            await maybe_await(callback({"error": exc}))

    async def finish_aborted(self, reason: Any) -> None:
        self.finish_reason = "abort"
        await self.send(self.chunk("abort", {"reason": str(reason) if reason is not None else None}))
        callback = self.options.get("on_abort")
        if callback is not None:
            await maybe_await(callback({"reason": reason, "run_id": self.run_id}))

    def result(self, text: str) -> GenerateResult:
        return ending.build_result(self, text)

    def to_state(self) -> dict:
        return resume_state.to_state(self)
