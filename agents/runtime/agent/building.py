"""Building and executing one run of an agent: options over the agent's defaults, the checks of a
call, the run's parts (model, system messages, tools, memory, processors), its task."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any, Callable

from ..abort import AbortSignal
from ..errors import AgentConfigError, RequestContextError
from ..messages import new_id, normalize_messages, now_iso, system_messages, text_of
from ..naming import snake_keys
from ..options import validate_options
from ..processors import processors_check, processors_flatten
from ..overrides import effective_definition
from ..errors import MissingCredentialsError
from ..providers.chain import chain_of
from ..providers.router import resolve_model
from ..results import GenerateResult
from ..run import Run, ThreadHooks, maybe_await
from ..scoring import scorers_check
from ..run.tool_suspension import auto_resume_instructions, open_suspensions
from ..storage import get_run_store
from ..stored_messages import to_model_messages
from ..tracing import run_span_open
from ..tools import ToolValidationError
from .config import check_tools
from .title import title_generate_soon


async def options_merge(agent: Any, options: dict) -> dict:
    """The call's options over the agent's ``default_options`` (snake_case keys), validated."""
    options = snake_keys(options)
    defaults = agent.default_options
    if callable(defaults):
        defaults = await maybe_await(defaults(options.get("request_context") or {}))
    merged = {**snake_keys(defaults or {}), **options}
    return validate_options(merged)


async def run_build(agent: Any, messages: Any, options: dict, emit: Callable | None, *, run_id: str | None = None,
                    prepared: tuple | None = None, hooks: ThreadHooks | None = None) -> Run:
    """The run for one call; ``emit`` gets its chunks (None: nobody listens, the run makes none).
    ``prepared`` is the memory's ``(thread, history)`` when the caller already read them (a thread
    wake reads them in its own transaction); ``hooks`` makes it a thread run."""
    return Run(**await run_parts(agent, messages, options, run_id=run_id, prepared=prepared), emit=emit,
               hooks=hooks)


async def run_parts(agent: Any, messages: Any, options: dict, *, run_id: str | None = None,
                    prepared: tuple | None = None) -> dict:
    """Everything a :class:`Run` is built from but its ``emit`` and thread hooks. All the checks
    of a call happen here (building the run itself then cannot fail)."""
    request_context = options.get("request_context") or {}
    if agent.request_context_schema is not None:
        try:
            agent.request_context_schema.validate(request_context)
        except ToolValidationError as exc:
            raise RequestContextError(f"request_context is invalid: {exc}") from None
    definition = await effective_definition(agent, request_context=request_context, versions=options.get("versions"))
    # the call's model, else the editor's published chain, else the code's
    if options.get("model"):
        model_spec, where = options["model"], "options.model"
    elif definition.model:
        model_spec, where = list(definition.model), "editor.model"
    else:
        model_spec, where = agent.get_model(request_context), "model"
        if not isinstance(model_spec, (str, dict, list)) and inspect.isawaitable(model_spec):
            model_spec = await model_spec
    chain = chain_of(model_spec, field=where)
    model = chain_credentials_check(chain)
    if options.get("instructions") is not None:
        system = system_messages(options["instructions"], "options.instructions")
    else:
        system = definition.instructions
    system = system + system_messages(options.get("system"), "options.system")
    tools = dict(definition.tools)
    for toolset in (options.get("toolsets") or {}).values():
        tools.update(check_tools(toolset, "options.toolsets"))
    if options.get("client_tools"):
        tools.update(check_tools(options["client_tools"], "options.client_tools"))
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
        if agent.memory is None:
            raise AgentConfigError("memory", f"agent {agent.id!r} has no memory; pass memory=Memory() to use threads")
        mopts = agent.memory.resolve_options(mem_opt.get("options"))
        thread = mem_opt["thread"]
        thread_id = thread if isinstance(thread, str) else thread["id"]
        title = None if isinstance(thread, str) else thread.get("title")
        metadata = None if isinstance(thread, str) else thread.get("metadata")
        if prepared is not None and title is None and metadata is None:
            thread_rec, remembered = prepared
        else:
            thread_rec, remembered = await agent.memory.store.prepare_thread(
                resource_id=mem_opt["resource"], thread_id=thread_id, title=title, metadata=metadata,
                last_messages=mopts["last_messages"], read_only=mopts["read_only"])
        remembered = to_model_messages(remembered)  # stored in Mastra's format; signals rendered here
        memory = {"store": agent.memory.store, "resource_id": mem_opt["resource"], "thread_id": thread_id,
                  "read_only": mopts["read_only"], "saved_upto": 0,
                  # keep the setting itself (True or {"model", "instructions"}), not a bool
                  "generate_title": (mopts["generate_title"] if not mopts["read_only"]
                                     and not (thread_rec or {}).get("title") else False),
                  "on_title_generated": mem_opt.get("on_title_generated")}
        for m in input_messages:
            m["threadId"] = thread_id
            m["resourceId"] = mem_opt["resource"]
    resumable: list[dict] = []
    if options.get("auto_resume_suspended_tools"):
        if memory is None:
            raise AgentConfigError("options.auto_resume_suspended_tools", "needs memory (a thread to resume in)")
        resumable = open_suspensions(remembered)
        if resumable:
            system = system + [{"role": "system", "content": auto_resume_instructions(resumable)}]
    scorers = await scorers_resolve(agent, options, request_context)
    run_id = run_id or options.get("run_id") or new_id()
    span = run_span_open(agent=agent, run_id=run_id, options=options, request_context=request_context,
                         input=[message_strip(m) for m in input_messages])
    abort_signal = options.get("abort_signal")
    if abort_signal is not None and not isinstance(abort_signal, AbortSignal):
        raise AgentConfigError("options.abort_signal", "must be an AbortSignal (AbortController().signal)")
    descriptions = dict(definition.tool_descriptions)
    return dict(
        agent=agent, run_id=run_id, model=model, system=system,
        messages=[message_strip(m) for m in remembered] + context + [message_strip(m) for m in input_messages],
        input_messages=input_messages, tools=tools, tool_descriptions=descriptions, options=options,
        memory=memory, remembered=remembered, abort_signal=abort_signal,
        request_context=request_context, run_store=get_run_store(),
        # a call's processors replace the agent's, also when the list is empty (Mastra's ``??``)
        input_processors=processors_flatten(options["input_processors"] if options.get("input_processors") is not None
                                            else await processors_resolve(agent.input_processors, request_context,
                                                                          "input_processors")),
        output_processors=processors_flatten(options["output_processors"] if options.get("output_processors") is not None
                                             else await processors_resolve(agent.output_processors, request_context,
                                                                           "output_processors")),
        max_processor_retries=options.get("max_processor_retries", agent.max_processor_retries),
        resolve_model=resolve_model, resumable=resumable, scorers=scorers, span=span, chain=chain,
        # the site's budgets and limits (``Mastra(policy=, budgets=)``): none for an agent on its own
        policy=getattr(agent.mastra, "policy", None), budgets=getattr(agent.mastra, "budgets", ()),
        editor_version=definition.version_id, started_at=stamp,
    )


def chain_credentials_check(chain: tuple) -> Any:
    """The first enabled model of ``chain`` that has its credentials (the run's ``model``); raises
    the first :class:`MissingCredentialsError` when none has (a run of one model: when it lacks
    them), before anything is stored. An entry without its key stays in the chain: its step fails
    over to the next at once."""
    first_error = None
    for entry in chain:
        if not entry.enabled:
            continue
        check = getattr(entry.model, "validate_credentials", None)
        try:
            if check is not None:
                check()
        except MissingCredentialsError as exc:
            first_error = first_error or exc
            continue
        return entry.model
    raise first_error


async def scorers_resolve(agent: Any, options: dict, request_context: dict) -> dict:
    """The run's scorers: the call's (names refer to the agent's) or the agent's (a dict, or a
    callable of the request context, sync or async)."""
    own = agent.scorers
    if callable(own):
        own = scorers_check(await maybe_await(own(request_context)), "scorers")
    if options.get("scorers") is not None:
        return scorers_check(options["scorers"], "options.scorers", own or {})
    return own or {}


async def run_execute(run: Run, *, resuming: bool = False) -> GenerateResult:
    """Run the run. With an abort signal it runs in its own task, so that an abort can cancel it
    without touching the caller; without one, in the caller's task (nothing would cancel it alone,
    and a task costs two turns of the event loop per call)."""
    if run.abort_signal is None:
        result = await run.execute(resuming=resuming)
        run_after(run)
        return result
    task = asyncio.ensure_future(run.execute(resuming=resuming))
    # cancel only a started run: a task cancelled before its first step would never reach the
    # run's abort handling (the run checks the signal itself when it starts)
    remove = run.abort_signal.add_listener(lambda _reason: task.cancel() if run.started else None)
    try:
        result = await task
    finally:
        remove()
    run_after(run)
    return result


def run_after(run: Run) -> None:
    """After a run: generate the thread's title in the background when the memory asks for it."""
    mem = run.memory
    if mem and mem.get("generate_title") and run.finish_reason not in ("error", "abort"):
        first = next((text_of(m) for m in run.input_messages if m["role"] == "user"), "")
        if first:
            title_generate_soon(run, first)


def message_strip(message: dict) -> dict:
    """What the run keeps of a stored message: role, content, provider options and the signal
    metadata processors read; ids and timestamps stay in the store."""
    out = {"role": message["role"], "content": message["content"]}
    for key in ("providerOptions", "type", "metadata"):
        if key in message:
            out[key] = message[key]
    return out


async def processors_resolve(processors: Any, request_context: dict, field: str) -> list:
    """The agent's processors: a list, or a callable of the request context (sync or async)
    returning one (checked like a list given to the constructor)."""
    if callable(processors):
        return processors_check(await maybe_await(processors(request_context)), field)
    return list(processors or [])


__all__ = ["message_strip", "options_merge", "processors_resolve", "run_after", "run_build",
           "run_execute", "run_parts"]
