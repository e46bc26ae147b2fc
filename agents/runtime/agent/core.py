"""The :class:`Agent` class: Mastra's constructor, its dynamic configuration, ``generate()`` /
``stream()``, tool approvals and the thread API, each delegating to the module that does the job.

Everything here is plain asyncio. Storage is reached through the protocols of ``storage.py``:
memory through ``agent.memory.store``, suspended runs through the process-wide run store.
"""

from __future__ import annotations

from typing import Any, Callable

from ..channels import channels_check
from ..delegation import sub_agent_tool
from ..errors import AgentConfigError
from ..ids import MAX_AGENT_ID, id_check
from ..memory import BaseMemory
from ..messages import new_id, system_messages
from ..naming import snake_keys
from ..options import check_agent_keywords, validate_hooks, validate_options
from ..output import AgentOutput
from ..overrides import EditorLocks, EffectiveDefinition, effective_definition
from ..processors import processors_check
from ..scoring import scorers_check
from ..transforms import transform_policy_check
from ..voice import MastraVoice, NoVoice, voice_check
from ..workflows import workflows_check
from ..providers.base import is_model_object
from ..providers.chain import chain_check, is_chain
from ..providers.router import resolve_model
from ..results import GenerateResult
from ..run import ThreadHooks, maybe_await
from ..threads import ThreadSubscription
from ..threads.inputs import SendResult
from ..tools import Schema, Tool
from .approvals import resume_output, thread_scope
from .building import options_merge, run_build, run_execute
from .config import AGENT_OPTIONS, check_caller_models, check_tools, validate_editor
from .resumption import resume_tool_output
from .thread_api import (message_send, queued_inputs_cancel, queued_inputs_list, signal_send, state_signal_send,
                         thread_abort, thread_events_subscribe, thread_runtime_for, thread_stream_start,
                         thread_subscribe)

#: the error field and wording of an override refused by the ``editor`` locks
LOCKED_FIELDS = {"instructions": ("editor.instructions", "instructions"), "tools": ("editor.tools", "its tools"),
                 "tool_descriptions": ("editor.tools.description", "tool descriptions")}


class Agent:
    """An agent defined in code. See DESIGN §3 for the full surface."""

    def __init__(self, *, id: str, name: str | None = None, instructions: Any = None, model: Any = None,
                 description: str | None = None, metadata: Any = None, tools: Any = None, hooks: dict | None = None,
                 agents: Any = None, default_options: Any = None, memory: BaseMemory | None = None,
                 input_processors: Any = None, output_processors: Any = None, max_processor_retries: int = 0,
                 request_context_schema: Any = None, notifications: dict | None = None, editor: Any = None,
                 scorers: Any = None, mastra: Any = None, transform: dict | None = None, workflows: Any = None,
                 caller_models: Any = None, channels: Any = None, voice: Any = None, **unknown: Any):
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
        if is_chain(model):
            chain_check(model, "model")  # a fallback chain: every entry checked now
        elif isinstance(model, (str, dict)):
            resolve_model(model)  # fails fast on a malformed string or unknown provider
        elif not callable(model) and not is_model_object(model):
            raise AgentConfigError("model", "must be a 'provider/model' string, a config dict, a model, a list "
                                            "of them (a fallback chain) or a callable")
        self.model = model
        #: the model ids a caller over HTTP or the websocket may pick (agents.model_choice); none by default
        self.caller_models = check_caller_models(caller_models)
        if tools is not None and not callable(tools):
            check_tools(tools, "tools")
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
        #: the platforms the agent converses on (``agents.runtime.channels``; docs/channels.md), or None
        self.channels = channels_check(channels, has_memory=memory is not None)
        for field, value in (("input_processors", input_processors), ("output_processors", output_processors)):
            if value is not None and not callable(value):
                processors_check(value, field)
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
        self.editor = validate_editor(editor)
        self.scorers = scorers if scorers is None or callable(scorers) else scorers_check(scorers, "scorers")
        self.mastra = mastra  # set by Mastra.register (Mastra's "injected automatically")
        self.transform = transform_policy_check(transform, "transform")
        self._workflows = workflows if workflows is None or callable(workflows) else workflows_check(workflows, "workflows")
        self._voice = voice_check(voice)
        #: stored editor overrides (admin): ``instructions``, ``tools``, ``tool_descriptions``
        self.editor_overrides: dict = {}

    def __repr__(self) -> str:
        return f"<Agent {self.id}>"

    # -- dynamic configuration ----------------------------------------------------------------
    def static_metadata(self) -> dict:
        """The metadata given as a dict (a copy), or ``{}`` when it is a callable of the request context."""
        return {} if callable(self._metadata) else dict(self._metadata or {})

    async def get_metadata(self, request_context: dict | None = None) -> dict:
        if callable(self._metadata):
            return await maybe_await(self._metadata(request_context or {})) or {}
        return dict(self._metadata or {})

    async def get_instructions(self, request_context: dict | None = None) -> list[dict]:
        """The code's instructions (a run applies editor overrides over them, ``agents.runtime.overrides``)."""
        value = self.instructions
        if callable(value):
            value = await maybe_await(value(request_context or {}))
        return system_messages(value, "instructions")

    async def get_tools(self, request_context: dict | None = None) -> dict[str, Tool]:
        tools = self._tools
        if callable(tools):
            tools = check_tools(await maybe_await(tools(request_context or {})), "tools")
        tools = dict(tools)
        agents = self._agents
        if callable(agents):
            agents = await maybe_await(agents(request_context or {}))
            if not isinstance(agents, dict) or not all(isinstance(a, Agent) for a in agents.values()):
                raise AgentConfigError("agents", "the callable must return a dict of {name: Agent}")
        for key, sub in (agents or {}).items():
            tools[f"agent-{key}"] = sub_agent_tool(key, sub)
        workflows = self._workflows
        if callable(workflows):
            workflows = workflows_check(await maybe_await(workflows(request_context or {})), "workflows")
        for key, workflow in (workflows or {}).items():
            tools[f"workflow-{key}"] = workflow.tool(key)
        return tools

    @property
    def voice(self) -> MastraVoice:
        """The agent's voice (``voice=``), or a :class:`NoVoice` whose calls raise ``voice_not_configured``."""
        return self._voice if self._voice is not None else NoVoice(self.id)

    @property
    def has_voice(self) -> bool:
        return self._voice is not None

    async def get_voice(self, request_context: dict | None = None) -> MastraVoice:
        """Mastra's ``getVoice()``: :attr:`voice`."""
        return self.voice

    @property
    def static_tools(self) -> dict[str, Tool] | None:
        """The tools given in code as a dict (``None`` when ``tools`` is a callable)."""
        return None if callable(self._tools) else dict(self._tools)

    def get_model(self, request_context: dict | None = None) -> Any:
        model = self.model
        if callable(model) and not is_model_object(model):
            model = model(request_context or {})
        return model

    async def get_definition(self, request_context: dict | None = None, *,
                             versions: dict | None = None) -> EffectiveDefinition:
        """What this agent runs with: the code's instructions and tools under the editor's
        published version (or the one ``versions`` selects), within the ``editor`` locks."""
        return await effective_definition(self, request_context=request_context, versions=versions)

    def apply_editor_overrides(self, *, instructions: Any = None, tools: list[str] | None = None,
                               tool_descriptions: dict[str, str] | None = None) -> None:
        """Set editor overrides in code; a field this agent's ``editor`` option locks is refused
        (:class:`EditorLocks`, the rule runs apply)."""
        locks = EditorLocks.of(self.editor)
        given = {"instructions": instructions, "tools": tools, "tool_descriptions": tool_descriptions}
        for name, value in given.items():
            if value is not None and not locks.editable(name):
                field, what = LOCKED_FIELDS[name]
                raise AgentConfigError(field, f"agent {self.id!r} does not allow editing {what}")
        if instructions is not None:
            system_messages(instructions, "instructions")
            self.editor_overrides["instructions"] = instructions
        if tools is not None:
            self.editor_overrides["tools"] = list(tools)
        if tool_descriptions is not None:
            self.editor_overrides["tool_descriptions"] = dict(tool_descriptions)

    def clear_editor_overrides(self) -> None:
        self.editor_overrides = {}

    # -- runs ---------------------------------------------------------------------------------
    async def generate(self, messages: Any, **options: Any) -> GenerateResult:
        """Run the tool loop to its end and return the full result (errors are in ``result.error``)."""
        options = await options_merge(self, options)
        run = await run_build(self, messages, options, options.get("on_chunk"))
        return await run_execute(run)

    async def stream(self, messages: Any, **options: Any) -> AgentOutput:
        """Start a run and return its :class:`AgentOutput` at once (chunks as they come)."""
        options = await options_merge(self, options)
        output = AgentOutput(options.get("run_id") or new_id(), on_chunk=options.get("on_chunk"))
        run = await run_build(self, messages, options, output.emit, run_id=output.run_id)
        return output.start(run_execute(run))

    # -- tool approval ------------------------------------------------------------------------
    # ``resource_id`` + ``thread_id`` scope a decision to a thread (a thread client's): a run that is
    # not that thread's is refused as an unknown one (``approval_not_found``)
    async def approve_tool_call(self, *, run_id: str, tool_call_id: str, resource_id: str | None = None,
                                thread_id: str | None = None, **options: Any) -> AgentOutput:
        """Execute the pending tool call of a suspended run and continue it (streaming)."""
        return await resume_output(self, run_id, tool_call_id, "approved", options,
                                   thread=thread_scope(resource_id, thread_id))

    async def decline_tool_call(self, *, run_id: str, tool_call_id: str, resource_id: str | None = None,
                                thread_id: str | None = None, **options: Any) -> AgentOutput:
        """Continue a suspended run without executing its pending tool call (streaming)."""
        return await resume_output(self, run_id, tool_call_id, "declined", options,
                                   thread=thread_scope(resource_id, thread_id))

    async def approve_tool_call_generate(self, *, run_id: str, tool_call_id: str, resource_id: str | None = None,
                                         thread_id: str | None = None, **options: Any) -> GenerateResult:
        output = await self.approve_tool_call(run_id=run_id, tool_call_id=tool_call_id, resource_id=resource_id,
                                              thread_id=thread_id, **options)
        return await output.get_full_output()

    async def decline_tool_call_generate(self, *, run_id: str, tool_call_id: str, resource_id: str | None = None,
                                         thread_id: str | None = None, **options: Any) -> GenerateResult:
        output = await self.decline_tool_call(run_id=run_id, tool_call_id=tool_call_id, resource_id=resource_id,
                                              thread_id=thread_id, **options)
        return await output.get_full_output()

    # -- tools that suspended themselves -------------------------------------------------------
    async def resume_stream(self, resume_data: Any, *, run_id: str, tool_call_id: str | None = None,
                            **options: Any) -> AgentOutput:
        """Continue a run suspended by a tool's ``suspend(payload)``: the tool runs again with
        ``context.resume_data`` (checked against its ``resume_schema``)."""
        return await resume_tool_output(self, resume_data, run_id=run_id, tool_call_id=tool_call_id, options=options)

    async def resume_generate(self, resume_data: Any, *, run_id: str, tool_call_id: str | None = None,
                              **options: Any) -> GenerateResult:
        output = await resume_tool_output(self, resume_data, run_id=run_id, tool_call_id=tool_call_id, options=options)
        return await output.get_full_output()

    # -- threads and signals (DESIGN §3-§4; ``thread_api`` and ``agents.runtime.threads`` do the work) --
    def thread_runtime(self, feature: str):
        """This process's thread runtime, for ``feature`` (named in the error): raises
        :class:`AgentConfigError` when the agent has no memory (threads need one)."""
        return thread_runtime_for(self, feature)

    async def start_thread_stream(self, messages: list[dict], options: dict, *, hooks: ThreadHooks,
                                  prepared: tuple | None = None) -> AgentOutput:
        """Start a thread run for the thread runtime (see ``thread_api.thread_stream_start``)."""
        return await thread_stream_start(self, messages, options, hooks=hooks, prepared=prepared)

    async def subscribe_to_thread(self, *, resource_id: str, thread_id: str,
                                  after_seq: int | None = None) -> ThreadSubscription:
        """Subscribe to a memory thread's chunks (each with ``seq``); ``after_seq`` resumes after it."""
        return await thread_subscribe(self, resource_id=resource_id, thread_id=thread_id, after_seq=after_seq)

    async def subscribe_thread_events(self, *, resource_id: str, thread_id: str,
                                      listener: Callable[[dict], Any]) -> Callable[[], None]:
        """Mastra's ``subscribeThreadEvents``: ``listener`` (sync or async) gets
        ``{"type": "queue-count-changed", "count": n}`` at once and whenever the number of the
        thread's messages waiting for a run of their own changes, whichever process changed it.
        Returns the function that unsubscribes it."""
        return await thread_events_subscribe(self, resource_id=resource_id, thread_id=thread_id, listener=listener)

    async def send_message(self, message: Any, *, resource_id: str | None = None, thread_id: str | None = None,
                           run_id: str | None = None, if_active: dict | None = None,
                           if_idle: dict | None = None) -> SendResult:
        """Deliver a user message into the thread's active run, or wake the idle thread (DESIGN §4)."""
        return await message_send(self, message, resource_id=resource_id, thread_id=thread_id, run_id=run_id,
                                  if_active=if_active, if_idle=if_idle)

    async def queue_message(self, message: Any, *, resource_id: str | None = None, thread_id: str | None = None,
                            run_id: str | None = None, if_active: dict | None = None,
                            if_idle: dict | None = None) -> SendResult:
        """Run the message as its own run after the active one (or now, when the thread is idle)."""
        return await message_send(self, message, queue=True, resource_id=resource_id, thread_id=thread_id,
                                  run_id=run_id, if_active=if_active, if_idle=if_idle)

    async def send_signal(self, signal: dict, *, resource_id: str | None = None, thread_id: str | None = None,
                          run_id: str | None = None, if_active: dict | None = None,
                          if_idle: dict | None = None) -> SendResult:
        """Send system context (user, state, reactive or notification signal) into a thread."""
        return await signal_send(self, signal, resource_id=resource_id, thread_id=thread_id, run_id=run_id,
                                 if_active=if_active, if_idle=if_idle)

    async def send_state_signal(self, state: dict, *, resource_id: str | None = None, thread_id: str | None = None,
                                run_id: str | None = None, if_active: dict | None = None,
                                if_idle: dict | None = None) -> SendResult:
        """Send a named state channel update; skipped (``reason="unchanged"``) when the same cache key
        and mode are current for the channel."""
        return await state_signal_send(self, state, resource_id=resource_id, thread_id=thread_id, run_id=run_id,
                                       if_active=if_active, if_idle=if_idle)

    async def send_notification_signal(self, notification: Any, *, resource_id: str, thread_id: str,
                                       if_idle: dict | None = None):
        """Store (create or coalesce) a notification in the thread's inbox, resolve the delivery
        policy and act on it; a list in gives a list out (``agents.runtime.notifications``)."""
        from ..notifications import send_notification_signal

        return await send_notification_signal(self, notification, resource_id=resource_id, thread_id=thread_id,
                                              if_idle=if_idle)

    async def abort_thread(self, *, resource_id: str, thread_id: str) -> bool:
        """Abort the thread's active run wherever it runs; True when a run was active."""
        return await thread_abort(self, resource_id=resource_id, thread_id=thread_id)

    async def list_queued_inputs(self, *, resource_id: str, thread_id: str) -> list[dict]:
        """Inputs accepted for the thread that no run has taken yet, oldest first."""
        return await queued_inputs_list(self, resource_id=resource_id, thread_id=thread_id)

    async def cancel_queued_inputs(self, ids: list[str], *, resource_id: str, thread_id: str) -> int:
        """Cancel waiting inputs of the thread by id; returns how many were still waiting there and are
        now cancelled (an id of another thread is not touched)."""
        return await queued_inputs_cancel(self, ids, resource_id=resource_id, thread_id=thread_id)


__all__ = ["Agent"]
