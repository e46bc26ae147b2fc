"""The ``Agent`` class: Mastra's constructor, ``generate()`` / ``stream()`` and tool approvals.

Everything here is plain asyncio. Storage is reached through the protocols of ``storage.py``:
memory through ``agent.memory.store``, suspended runs through the process-wide run store.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any, Callable

from .abort import AbortSignal
from .errors import AgentConfigError, RequestContextError
from .ids import MAX_AGENT_ID, id_check
from .run import Run, ThreadHooks, maybe_await
from .memory import BaseMemory
from .messages import new_id, normalize_messages, now_iso, system_messages, text_of
from .options import check_agent_keywords, snake_keys, validate_hooks, validate_options
from .output import AgentOutput
from .providers.router import resolve_model
from .results import GenerateResult
from .storage import get_run_store
from .tools import Schema, Tool, ToolValidationError, create_tool

logger = logging.getLogger(__name__)

EDITOR_KEYS = ("instructions", "tools")
#: the keywords ``Agent()`` takes (Mastra's constructor options, snake_case)
AGENT_OPTIONS = ("id", "name", "instructions", "model", "description", "metadata", "tools", "hooks", "agents",
                 "default_options", "memory", "input_processors", "output_processors", "max_processor_retries",
                 "request_context_schema", "notifications", "editor")
_NO_EMIT = None


def _validate_editor(editor: Any) -> Any:
    if editor is None or editor is False:
        return editor
    if not isinstance(editor, dict):
        raise AgentConfigError("editor", "must be False or {'instructions': bool, 'tools': bool | {'description': bool}}")
    for key, value in editor.items():
        if key not in EDITOR_KEYS:
            raise AgentConfigError(f"editor.{key}", "unknown key (expected 'instructions' or 'tools')")
        if key == "instructions" and not isinstance(value, bool):
            raise AgentConfigError("editor.instructions", "must be a bool")
        if key == "tools" and not isinstance(value, bool):
            if not isinstance(value, dict) or set(value) - {"description"} or not isinstance(value.get("description", False), bool):
                raise AgentConfigError("editor.tools", "must be a bool or {'description': bool}")
    return editor


def _check_tools(tools: Any, field: str) -> dict[str, Tool]:
    if not isinstance(tools, dict):
        raise AgentConfigError(field, "must be a dict of {name: tool}")
    for name, tool in tools.items():
        if not isinstance(name, str) or not name:
            raise AgentConfigError(field, "tool names must be non-empty strings")
        if not isinstance(tool, Tool):
            raise AgentConfigError(f"{field}.{name}", "must be a tool made with create_tool()")
    return tools


class Agent:
    """An agent defined in code. See DESIGN §3 for the full surface."""

    def __init__(self, *, id: str, name: str | None = None, instructions: Any = None, model: Any = None,
                 description: str | None = None, metadata: Any = None, tools: Any = None, hooks: dict | None = None,
                 agents: Any = None, default_options: Any = None, memory: BaseMemory | None = None,
                 input_processors: Any = None, output_processors: Any = None, max_processor_retries: int = 0,
                 request_context_schema: Any = None, notifications: dict | None = None, editor: Any = None,
                 **unknown: Any):
        check_agent_keywords(unknown, AGENT_OPTIONS)
        if not isinstance(id, str) or not id.strip():
            raise AgentConfigError("id", "must be a non-empty string")
        id_check(id, "id", MAX_AGENT_ID, error=AgentConfigError)
        self.id = id
        self.name = name if name is not None else id
        if not isinstance(self.name, str):
            raise AgentConfigError("name", "must be a string")
        if description is not None and not isinstance(description, str):
            raise AgentConfigError("description", "must be a string")
        self.description = description or ""
        if metadata is not None and not (isinstance(metadata, dict) or callable(metadata)):
            raise AgentConfigError("metadata", "must be a dict or a callable of request_context")
        self._metadata = metadata
        if instructions is None:
            raise AgentConfigError("instructions", "is required")
        if not callable(instructions):
            system_messages(instructions, "instructions")  # validates the shape now
        self.instructions = instructions
        if model is None:
            raise AgentConfigError("model", "is required (e.g. 'openai/gpt-4o-mini' or 'local/echo')")
        if isinstance(model, (str, dict)):
            resolve_model(model)  # fails fast on a malformed string or unknown provider
        elif not callable(model) and not hasattr(model, "stream"):
            raise AgentConfigError("model", "must be a 'provider/model' string, a config dict, a model or a callable")
        self.model = model
        if tools is not None and not callable(tools):
            _check_tools(tools, "tools")
        self._tools = tools or {}
        if hooks is not None:
            validate_hooks(hooks, "hooks")
        self.hooks = snake_keys(hooks) if hooks else {}
        if agents is not None and not callable(agents):
            if not isinstance(agents, dict) or not all(isinstance(a, Agent) for a in agents.values()):
                raise AgentConfigError("agents", "must be a dict of {name: Agent}")
        self._agents = agents or {}
        if default_options is not None and not (isinstance(default_options, dict) or callable(default_options)):
            raise AgentConfigError("default_options", "must be a dict of generate options or a callable")
        if isinstance(default_options, dict):
            try:
                validate_options(snake_keys(dict(default_options)))
            except AgentConfigError as exc:  # name the constructor field, not the call option
                raise AgentConfigError("default_options" + exc.field[len("options"):], exc.problem) from None
        self.default_options = default_options
        if memory is not None and not isinstance(memory, BaseMemory):
            raise AgentConfigError("memory", "must be a Memory instance (agents.memory.Memory)")
        self.memory = memory
        for field, value in (("input_processors", input_processors), ("output_processors", output_processors)):
            if value is not None and not callable(value) and not isinstance(value, (list, tuple)):
                raise AgentConfigError(field, "must be a list of processors")
        self.input_processors = input_processors or []
        self.output_processors = output_processors or []
        if not isinstance(max_processor_retries, int) or isinstance(max_processor_retries, bool) or max_processor_retries < 0:
            raise AgentConfigError("max_processor_retries", "must be a non-negative integer")
        self.max_processor_retries = max_processor_retries
        self.request_context_schema = (Schema(request_context_schema, field_name="request_context_schema")
                                       if request_context_schema is not None else None)
        if notifications is not None:
            if not isinstance(notifications, dict) or set(snake_keys(notifications)) - {"delivery_policy"}:
                raise AgentConfigError("notifications", "must be {'delivery_policy': {...}}")
            notifications = snake_keys(notifications)
        self.notifications = notifications or {}
        self.editor = _validate_editor(editor)
        self.mastra = None
        self._overrides: dict = {}

    def __repr__(self) -> str:
        return f"<Agent {self.id}>"

    # -- dynamic configuration ----------------------------------------------------------------
    async def get_metadata(self, request_context: dict | None = None) -> dict:
        if callable(self._metadata):
            return await maybe_await(self._metadata(request_context or {})) or {}
        return dict(self._metadata or {})

    async def get_instructions(self, request_context: dict | None = None) -> list[dict]:
        if "instructions" in self._overrides:
            return system_messages(self._overrides["instructions"], "instructions")
        value = self.instructions
        if callable(value):
            value = await maybe_await(value(request_context or {}))
        return system_messages(value, "instructions")

    async def get_tools(self, request_context: dict | None = None) -> dict[str, Tool]:
        tools = self._tools
        if callable(tools):
            tools = _check_tools(await maybe_await(tools(request_context or {})), "tools")
        tools = dict(tools)
        if "tools" in self._overrides:
            tools = {n: t for n, t in tools.items() if n in self._overrides["tools"]}
        agents = self._agents
        if callable(agents):
            agents = await maybe_await(agents(request_context or {}))
        for key, sub in (agents or {}).items():
            tools[f"agent-{key}"] = _agent_tool(sub)
        return tools

    def get_model(self, request_context: dict | None = None) -> Any:
        model = self.model
        if callable(model) and not hasattr(model, "stream"):
            model = model(request_context or {})
        return model

    def apply_editor_overrides(self, *, instructions: Any = None, tools: list[str] | None = None,
                               tool_descriptions: dict[str, str] | None = None) -> None:
        """Apply stored editor overrides within this agent's editor locks (DESIGN §1, admin)."""
        editor = self.editor
        allow_instr = editor is None or (editor is not False and editor.get("instructions", False))
        tools_lock = None if editor is None else (False if editor is False else editor.get("tools", False))
        if instructions is not None:
            if not allow_instr:
                raise AgentConfigError("editor.instructions", f"agent {self.id!r} does not allow editing instructions")
            system_messages(instructions, "instructions")
            self._overrides["instructions"] = instructions
        if tools is not None:
            if not (tools_lock is None or tools_lock is True):
                raise AgentConfigError("editor.tools", f"agent {self.id!r} does not allow editing its tools")
            self._overrides["tools"] = list(tools)
        if tool_descriptions is not None:
            if not (tools_lock is None or tools_lock is True or (isinstance(tools_lock, dict) and tools_lock.get("description"))):
                raise AgentConfigError("editor.tools.description", f"agent {self.id!r} does not allow editing tool descriptions")
            self._overrides["tool_descriptions"] = dict(tool_descriptions)

    def clear_editor_overrides(self) -> None:
        self._overrides = {}

    # -- runs ---------------------------------------------------------------------------------
    async def _options(self, options: dict) -> dict:
        options = snake_keys(options)
        defaults = self.default_options
        if callable(defaults):
            defaults = await maybe_await(defaults(options.get("request_context") or {}))
        merged = {**snake_keys(defaults or {}), **options}
        return validate_options(merged)

    async def _build_run(self, messages: Any, options: dict, emit: Callable, *, run_id: str | None = None,
                         prepared: tuple | None = None, hooks: ThreadHooks | None = None) -> Run:
        """The run for one call. ``prepared`` is the memory's ``(thread, history)`` when the caller
        already read them (a thread wake reads them in its own transaction); ``hooks`` makes it a
        thread run."""
        return Run(**await self._run_parts(messages, options, run_id=run_id, prepared=prepared), emit=emit,
                   hooks=hooks)

    async def _run_parts(self, messages: Any, options: dict, *, run_id: str | None = None,
                         prepared: tuple | None = None) -> dict:
        """Everything a :class:`Run` is built from but its ``emit`` and thread hooks. All the checks
        of a call happen here (building the run itself then cannot fail)."""
        request_context = options.get("request_context") or {}
        if self.request_context_schema is not None:
            try:
                self.request_context_schema.validate(request_context)
            except ToolValidationError as exc:
                raise RequestContextError(f"request_context is invalid: {exc}") from None
        model_spec = options.get("model") or self.get_model(request_context)
        if inspect.isawaitable(model_spec):
            model_spec = await model_spec
        model = resolve_model(model_spec)
        check = getattr(model, "validate_credentials", None)
        if check is not None:
            check()
        if options.get("instructions") is not None:
            system = system_messages(options["instructions"], "options.instructions")
        else:
            system = await self.get_instructions(request_context)
        system = system + system_messages(options.get("system"), "options.system")
        tools = await self.get_tools(request_context)
        for toolset in (options.get("toolsets") or {}).values():
            tools.update(_check_tools(toolset, "options.toolsets"))
        if options.get("client_tools"):
            tools.update(_check_tools(options["client_tools"], "options.client_tools"))
        choice = options.get("tool_choice")
        if isinstance(choice, dict) and choice["tool_name"] not in tools:
            raise AgentConfigError("options.tool_choice", f"unknown tool {choice['tool_name']!r}")
        input_messages = normalize_messages(messages) if messages is not None else []
        stamp = now_iso()
        for m in input_messages:
            m.setdefault("id", new_id())
            m.setdefault("createdAt", stamp)
        context = normalize_messages(options["context"], "options.context") if options.get("context") else []
        memory = None
        remembered: list[dict] = []
        mem_opt = options.get("memory")
        if mem_opt is not None:
            if self.memory is None:
                raise AgentConfigError("memory", f"agent {self.id!r} has no memory; pass memory=Memory() to use threads")
            mopts = self.memory.resolve_options(mem_opt.get("options"))
            thread = mem_opt["thread"]
            thread_id = thread if isinstance(thread, str) else thread["id"]
            title = None if isinstance(thread, str) else thread.get("title")
            metadata = None if isinstance(thread, str) else thread.get("metadata")
            if prepared is not None and title is None and metadata is None:
                thread_rec, remembered = prepared
            else:
                thread_rec, remembered = await self.memory.store.prepare_thread(
                    resource_id=mem_opt["resource"], thread_id=thread_id, title=title, metadata=metadata,
                    last_messages=mopts["last_messages"], read_only=mopts["read_only"])
            memory = {"store": self.memory.store, "resource_id": mem_opt["resource"], "thread_id": thread_id,
                      "read_only": mopts["read_only"], "saved_upto": 0,
                      # keep the setting itself (True or {"model", "instructions"}), not a bool
                      "generate_title": (mopts["generate_title"] if not mopts["read_only"]
                                         and not (thread_rec or {}).get("title") else False),
                      "on_title_generated": mem_opt.get("on_title_generated")}
            for m in input_messages:
                m["threadId"] = thread_id
                m["resourceId"] = mem_opt["resource"]
        abort_signal = options.get("abort_signal")
        if abort_signal is not None and not isinstance(abort_signal, AbortSignal):
            raise AgentConfigError("options.abort_signal", "must be an AbortSignal (AbortController().signal)")
        descriptions = dict(self._overrides.get("tool_descriptions") or {})
        return dict(
            agent=self, run_id=run_id or options.get("run_id") or new_id(), model=model, system=system,
            messages=[_strip(m) for m in remembered] + context + [_strip(m) for m in input_messages],
            input_messages=input_messages, tools=tools, tool_descriptions=descriptions, options=options,
            memory=memory, remembered=remembered, abort_signal=abort_signal,
            request_context=request_context, run_store=get_run_store(),
            # a call's processors replace the agent's, also when the list is empty (Mastra's ``??``)
            input_processors=list(options["input_processors"] if options.get("input_processors") is not None
                                  else _static(self.input_processors, request_context)),
            output_processors=list(options["output_processors"] if options.get("output_processors") is not None
                                   else _static(self.output_processors, request_context)),
            max_processor_retries=options.get("max_processor_retries", self.max_processor_retries),
            resolve_model=resolve_model,
        )

    async def _execute(self, run: Run, *, resuming: bool = False) -> GenerateResult:
        """Run in its own task so that an abort can cancel it without touching the caller."""
        task = asyncio.ensure_future(run.execute(resuming=resuming))
        remove = None
        if run.abort_signal is not None:
            # cancel only a started run: a task cancelled before its first step would never reach
            # the run's abort handling (the run checks the signal itself when it starts)
            remove = run.abort_signal.add_listener(lambda _reason: task.cancel() if run.started else None)
        try:
            result = await task
        finally:
            if remove is not None:
                remove()
        self._after_run(run)
        return result

    def _after_run(self, run: Run) -> None:
        mem = run.memory
        if mem and mem.get("generate_title") and run.finish_reason not in ("error", "abort"):
            first = next((text_of(m) for m in run.input_messages if m["role"] == "user"), "")
            if first:
                task = asyncio.ensure_future(self._generate_title(run, first))
                _background.add(task)
                task.add_done_callback(_background.discard)

    async def _generate_title(self, run: Run, first_message: str) -> None:
        mem = run.memory
        setting = mem["generate_title"]
        model = run.model
        instructions = ("Write a short title (at most 8 words) for a conversation that starts with the "
                        "user message below. Answer with the title only.")
        if isinstance(setting, dict):
            if setting.get("model") is not None:
                model = resolve_model(setting["model"])
            instructions = setting.get("instructions") or instructions
        try:
            from .providers.base import ModelRequest
            parts = []
            async for event in model.stream(ModelRequest(messages=[{"role": "system", "content": instructions},
                                                                   {"role": "user", "content": first_message}])):
                if event["type"] == "text-delta":
                    parts.append(event["text"])
            title = " ".join("".join(parts).split())[:100] or first_message[:100]
            await mem["store"].set_thread_title(resource_id=mem["resource_id"], thread_id=mem["thread_id"], title=title)
            callback = mem.get("on_title_generated")
            if callback is not None:
                await maybe_await(callback(title))
        except Exception:
            logger.exception("title generation failed for thread %s", mem["thread_id"])

    async def generate(self, messages: Any, **options: Any) -> GenerateResult:
        """Run the tool loop to its end and return the full result (errors are in ``result.error``)."""
        options = await self._options(options)
        emit = options.get("on_chunk") or _noop
        run = await self._build_run(messages, options, emit)
        return await self._execute(run)

    async def stream(self, messages: Any, **options: Any) -> AgentOutput:
        """Start a run and return its :class:`AgentOutput` at once (chunks as they come)."""
        options = await self._options(options)
        holder: dict = {}
        run = await self._build_run(messages, options, lambda chunk: holder["emit"](chunk))
        on_chunk = options.get("on_chunk")

        async def start(emit):
            holder["emit"] = emit
            return await self._execute(run)

        return AgentOutput(run.run_id, start, on_chunk=on_chunk)

    # -- tool approval ------------------------------------------------------------------------
    async def _resume_parts(self, run_id: str, tool_call_id: str, decision: str, options: dict) -> dict:
        """Claim the suspended run and return what its continuation is built from (its stored state
        with ``decision`` for the call, its memory and the merged options)."""
        if not isinstance(run_id, str) or not isinstance(tool_call_id, str):
            raise AgentConfigError("run_id", "run_id and tool_call_id must be strings")
        state = await get_run_store().claim_suspended(run_id=run_id, tool_call_id=tool_call_id, decision=decision)
        stored = state.get("options") or {}
        merged = await self._options({**stored, **snake_keys(options)})
        merged["request_context"] = merged.get("request_context") or state.get("request_context") or {}
        mem = state.get("memory")
        parts = await self._run_parts(None, merged, run_id=run_id)
        if mem:
            if self.memory is None:
                raise AgentConfigError("memory", f"agent {self.id!r} has no memory to resume thread runs")
            parts["memory"] = {**mem, "store": self.memory.store}
        parts["suspended_state"] = {**state, "decisions": {**state["decisions"], tool_call_id: decision}}
        return parts

    async def approve_tool_call(self, *, run_id: str, tool_call_id: str, **options: Any) -> AgentOutput:
        """Execute the pending tool call of a suspended run and continue it (streaming)."""
        return await self._resume_output(run_id, tool_call_id, "approved", options)

    async def decline_tool_call(self, *, run_id: str, tool_call_id: str, **options: Any) -> AgentOutput:
        """Continue a suspended run without executing its pending tool call (streaming)."""
        return await self._resume_output(run_id, tool_call_id, "declined", options)

    async def approve_tool_call_generate(self, *, run_id: str, tool_call_id: str, **options: Any) -> GenerateResult:
        output = await self._resume_output(run_id, tool_call_id, "approved", options)
        return await output.get_full_output()

    async def decline_tool_call_generate(self, *, run_id: str, tool_call_id: str, **options: Any) -> GenerateResult:
        output = await self._resume_output(run_id, tool_call_id, "declined", options)
        return await output.get_full_output()

    async def _resume_output(self, run_id: str, tool_call_id: str, decision: str, options: dict) -> AgentOutput:
        """Claim the suspended run and continue it. A thread run continues under the thread's lease
        (its chunks reach the thread's subscribers); any other run continues here."""
        parts = await self._resume_parts(run_id, tool_call_id, decision, options)
        user_on_chunk = snake_keys(options).get("on_chunk")

        def make(hooks: ThreadHooks | None, thread_emit: Callable | None = None,
                 finalize: Callable | None = None) -> AgentOutput:
            holder: dict = {}
            run = Run(**parts, emit=lambda chunk: holder["emit"](chunk), hooks=hooks)

            def on_chunk(chunk: dict) -> Any:
                if thread_emit is not None:
                    thread_emit(chunk)
                return user_on_chunk(chunk) if user_on_chunk is not None else None

            async def start(emit):
                holder["emit"] = emit
                result = await self._execute(run, resuming=True)
                if finalize is not None:
                    await finalize(result)
                return result

            return AgentOutput(run_id, start, on_chunk=on_chunk)

        if parts["memory"] is not None:
            from .threads import get_thread_runtime

            async def resume(thread_emit: Callable, finalize: Callable, hooks: ThreadHooks) -> AgentOutput:
                return make(hooks, thread_emit, finalize)

            try:
                runtime = get_thread_runtime()
            except AgentConfigError:  # no thread store in this process: a plain memory run
                runtime = None
            output = await runtime.resume_suspended(self, run_id=run_id, resume=resume) if runtime else None
            if output is not None:
                return output
        return make(None)

    # -- threads and signals (DESIGN §3-§4; agents.runtime.threads does the work) -----------------
    def thread_runtime(self, feature: str):
        """This process's thread runtime, for ``feature`` (named in the error): raises
        :class:`AgentConfigError` when the agent has no memory (threads need one)."""
        if self.memory is None:
            raise AgentConfigError("memory", f"{feature} needs memory=Memory() on agent {self.id!r}")
        from .threads import get_thread_runtime

        return get_thread_runtime()


    async def start_thread_stream(self, messages: list[dict], options: dict, *, on_chunk: Callable,
                                  finalize: Callable, hooks: ThreadHooks,
                                  prepared: tuple | None = None) -> AgentOutput:
        """Start a thread run (for the thread runtime, which passes its ``hooks``) and return its
        output. Every chunk goes to ``on_chunk``; the output completes after ``finalize(result)``
        (the thread runtime settles the lease there)."""
        options = await self._options(options)
        holder: dict = {}
        run = await self._build_run(messages, options, lambda chunk: holder["emit"](chunk), prepared=prepared,
                                    hooks=hooks)

        async def start(emit):
            holder["emit"] = emit
            result = await self._execute(run)
            await finalize(result)
            return result

        return AgentOutput(run.run_id, start, on_chunk=on_chunk)

    async def subscribe_to_thread(self, *, resource_id: str, thread_id: str, after_seq: int | None = None):
        """Subscribe to a memory thread's chunks (each with ``seq``); ``after_seq`` resumes after it."""
        from .errors import SignalError

        runtime = self.thread_runtime("subscribe_to_thread")
        for name, value in (("resource_id", resource_id), ("thread_id", thread_id)):
            if not isinstance(value, str) or not value:
                raise SignalError(f"{name} must be a non-empty string", code="missing_target")
        if after_seq is not None and (not isinstance(after_seq, int) or isinstance(after_seq, bool) or after_seq < 0):
            raise SignalError("after_seq must be a non-negative integer", code="invalid_after_seq")
        return await runtime.subscribe(self, resource_id, thread_id, after_seq)

    async def _send(self, signal: dict, mode: str, *, resource_id=None, thread_id=None, run_id=None,
                    if_active=None, if_idle=None, state=None, what: str):
        runtime = self.thread_runtime(what)
        return await runtime.send(self, signal=signal, mode=mode, resource_id=resource_id, thread_id=thread_id,
                                  run_id=run_id, if_active=if_active, if_idle=if_idle, state=state)

    async def send_message(self, message: Any, *, resource_id: str | None = None, thread_id: str | None = None,
                           run_id: str | None = None, if_active: dict | None = None, if_idle: dict | None = None):
        """Deliver a user message into the thread's active run, or wake the idle thread (DESIGN §4)."""
        from .signal import message_to_signal

        return await self._send(message_to_signal(message), "send", resource_id=resource_id, thread_id=thread_id,
                                run_id=run_id, if_active=if_active, if_idle=if_idle, what="send_message")

    async def queue_message(self, message: Any, *, resource_id: str | None = None, thread_id: str | None = None,
                            run_id: str | None = None, if_active: dict | None = None, if_idle: dict | None = None):
        """Run the message as its own run after the active one (or now, when the thread is idle)."""
        from .signal import message_to_signal

        return await self._send(message_to_signal(message), "queue", resource_id=resource_id, thread_id=thread_id,
                                run_id=run_id, if_active=if_active, if_idle=if_idle, what="queue_message")

    async def send_signal(self, signal: dict, *, resource_id: str | None = None, thread_id: str | None = None,
                          run_id: str | None = None, if_active: dict | None = None, if_idle: dict | None = None):
        """Send system context (user, state, reactive or notification signal) into a thread."""
        from .signal import create_signal

        return await self._send(create_signal(signal), "send", resource_id=resource_id, thread_id=thread_id,
                                run_id=run_id, if_active=if_active, if_idle=if_idle, what="send_signal")

    async def send_state_signal(self, state: dict, *, resource_id: str | None = None, thread_id: str | None = None,
                                run_id: str | None = None, if_active: dict | None = None, if_idle: dict | None = None):
        """Send a named state channel update; skipped (``reason="unchanged"``) when the same cache key
        and mode are current for the channel."""
        from .signal import state_to_signal

        signal, tracking = state_to_signal(state)
        return await self._send(signal, "send", resource_id=resource_id, thread_id=thread_id, run_id=run_id,
                                if_active=if_active, if_idle=if_idle, state=tracking, what="send_state_signal")

    async def send_notification_signal(self, notification: Any, *, resource_id: str, thread_id: str,
                                       if_idle: dict | None = None):
        """Store (create or coalesce) a notification in the thread's inbox, resolve the delivery
        policy and act on it; a list in gives a list out (``agents.runtime.notifications``)."""
        from .notifications import send_notification_signal

        return await send_notification_signal(self, notification, resource_id=resource_id, thread_id=thread_id,
                                              if_idle=if_idle)

    async def abort_thread(self, *, resource_id: str, thread_id: str) -> bool:
        """Abort the thread's active run wherever it runs; True when a run was active."""
        from .threads import thread_key

        return await self.thread_runtime("abort_thread").abort(thread_key(resource_id, thread_id))

    async def list_queued_inputs(self, *, resource_id: str, thread_id: str) -> list[dict]:
        """Inputs accepted for the thread that no run has taken yet, oldest first."""
        return await self.thread_runtime("list_queued_inputs").list_queued(resource_id, thread_id)

    async def cancel_queued_inputs(self, ids: list[str]) -> int:
        """Cancel waiting inputs by id; returns how many were still waiting and are now cancelled."""
        return await self.thread_runtime("cancel_queued_inputs").cancel_queued(ids)


_background: set = set()


def _noop(chunk: dict) -> None:
    return None


def _strip(message: dict) -> dict:
    """What the run keeps of a stored message: role, content, provider options and the signal
    metadata processors read; ids and timestamps stay in the store."""
    out = {"role": message["role"], "content": message["content"]}
    for key in ("providerOptions", "type", "metadata"):
        if key in message:
            out[key] = message[key]
    return out


def _static(processors: Any, request_context: dict) -> list:
    if callable(processors):
        return list(processors(request_context))
    return list(processors or [])


def _agent_tool(sub: Agent) -> Tool:
    async def execute(input: dict, context) -> dict:
        result = await sub.generate(input["prompt"], abort_signal=context.abort_signal,
                                    request_context=context.request_context)
        if result.error is not None:
            raise RuntimeError(f"sub-agent {sub.id!r} failed: {result.error}")
        return {"text": result.text}

    return create_tool(id=f"agent-{sub.id}", description=sub.description or f"Delegate a task to the {sub.name} agent.",
                       input_schema={"type": "object", "properties": {"prompt": {"type": "string"}},
                                     "required": ["prompt"]},
                       execute=execute)
