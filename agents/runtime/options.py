"""The options of ``generate()`` / ``stream()`` (snake_case), validated once per call."""

from __future__ import annotations

from typing import Any, Callable

from .errors import AgentConfigError
from .ids import MAX_RESOURCE_ID, MAX_RUN_ID, MAX_THREAD_ID, id_check
from .legacy_options import legacy_options_apply
from .limits import current_limits
from .naming import option_dict, snake_case, snake_keys
from .option_checks import surface_options_check
from .overrides import validate_versions
from .providers.chain import chain_check, is_chain
from .tools import Schema

OPTION_NAMES = frozenset({
    "max_steps", "stop_when", "on_iteration_complete", "on_chunk", "on_error", "on_abort", "on_step_finish",
    "on_finish", "active_tools", "abort_signal", "prepare_step", "require_tool_approval",
    "tool_call_concurrency", "context", "structured_output", "instructions", "system", "memory",
    "model_settings", "tool_choice", "toolsets", "client_tools", "hooks", "save_per_step",
    "provider_options", "run_id", "request_context", "include_raw_chunks", "input_processors",
    "output_processors", "max_processor_retries", "model", "versions",
})
#: options of Mastra's ``generate()`` / ``stream()`` that this runtime does not implement yet: passing
#: one raises ``AgentConfigError`` (code ``unsupported_option``) instead of ignoring it
UNSUPPORTED_OPTIONS = frozenset({
    "auto_resume_suspended_tools", "delegation", "is_task_complete", "output", "return_scorer_data", "scorers",
    "telemetry", "tracing_context", "tracing_options",
})
#: the constructor options of Mastra's ``Agent`` that this runtime does not implement yet
UNSUPPORTED_AGENT_OPTIONS = frozenset({
    "workflows", "scorers", "transform", "mastra", "default_generate_options_legacy",
    "default_stream_options_legacy",
})
NOT_SUPPORTED = "is a Mastra option this runtime does not support yet"
# -- the rest of Mastra's Agent surface (legacy names, processors, delegation, scoring, tracing) --
SURFACE_OPTIONS = frozenset({"output", "delegation", "auto_resume_suspended_tools", "is_task_complete", "scorers",
                             "return_scorer_data", "telemetry", "tracing_options", "tracing_context"})
OPTION_NAMES = OPTION_NAMES | SURFACE_OPTIONS
UNSUPPORTED_OPTIONS = UNSUPPORTED_OPTIONS - SURFACE_OPTIONS
SURFACE_AGENT_OPTIONS = frozenset({"scorers", "mastra", "transform", "workflows"})
UNSUPPORTED_AGENT_OPTIONS = UNSUPPORTED_AGENT_OPTIONS - SURFACE_AGENT_OPTIONS
#: constructor options rejected for good (not "yet"), with the reason
REJECTED_AGENT_OPTIONS: dict[str, str] = {}
MODEL_SETTINGS = frozenset({"temperature", "max_output_tokens", "top_p", "top_k", "presence_penalty",
                            "frequency_penalty", "stop_sequences", "max_retries", "seed", "headers"})
MEMORY_KEYS = frozenset({"resource", "thread", "options", "on_title_generated"})
MEMORY_OPTION_KEYS = frozenset({"last_messages", "read_only", "generate_title"})
STRUCTURED_KEYS = frozenset({"schema", "model", "error_strategy", "fallback_value", "instructions",
                             "json_prompt_injection", "provider_options", "logger"})
#: what ``structured_output.logger`` must have: a ``logging.Logger`` (or adapter) has them
LOGGER_METHODS = ("error", "warning", "info")
HOOK_NAMES = frozenset({"before_tool_call", "after_tool_call"})
CALLBACKS = ("on_iteration_complete", "on_chunk", "on_error", "on_abort", "on_step_finish", "on_finish",
             "prepare_step")


def check_agent_keywords(unknown: dict, known: tuple[str, ...]) -> None:
    """Reject keywords ``Agent()`` does not take: a Mastra option not implemented yet
    (code ``unsupported_option``) or an unknown one (code ``agent_config_error``, with the snake_case
    spelling when the keyword is the camelCase of a known one)."""
    if not unknown:
        return
    name = sorted(unknown)[0]
    snake = snake_case(name)
    if snake in REJECTED_AGENT_OPTIONS:
        raise AgentConfigError(name, REJECTED_AGENT_OPTIONS[snake], code="unsupported_option")
    if snake in UNSUPPORTED_AGENT_OPTIONS:
        raise AgentConfigError(name, NOT_SUPPORTED, code="unsupported_option")
    if snake != name and snake in known:
        raise AgentConfigError(name, f"unknown option (the keyword is {snake!r})")
    raise AgentConfigError(name, "unknown option")


def validate_options(options: dict) -> dict:
    """Check names and shapes of call options; return them (snake_case). Raises AgentConfigError."""
    if not options:  # a call with no options and an agent without defaults: nothing to check
        return options
    unknown = set(options) - OPTION_NAMES
    if unknown:
        name = sorted(unknown)[0]
        if name in UNSUPPORTED_OPTIONS:
            raise AgentConfigError(f"options.{name}", NOT_SUPPORTED, code="unsupported_option")
        raise AgentConfigError(f"options.{name}", "unknown option")
    legacy_options_apply(options)
    max_steps = options.get("max_steps")
    if max_steps is not None and (not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1):
        raise AgentConfigError("options.max_steps", "must be a positive integer")
    limits = current_limits()
    if max_steps is not None and max_steps > limits.max_steps:
        raise AgentConfigError("options.max_steps", f"must be at most {limits.max_steps}")
    for name in CALLBACKS:
        if options.get(name) is not None and not callable(options[name]):
            raise AgentConfigError(f"options.{name}", "must be callable")
    stop_when = options.get("stop_when")
    if stop_when is not None:
        conditions = stop_when if isinstance(stop_when, (list, tuple)) else [stop_when]
        if not all(callable(c) for c in conditions):
            raise AgentConfigError("options.stop_when", "must be a condition or a list of conditions (callables)")
    conc = options.get("tool_call_concurrency")
    if conc is not None and (not isinstance(conc, int) or isinstance(conc, bool) or conc < 1):
        raise AgentConfigError("options.tool_call_concurrency", "must be a positive integer")
    settings = options.get("model_settings")
    if settings is not None:
        settings = option_dict(settings, "options.model_settings", MODEL_SETTINGS, unknown="unknown model setting")
        for key in ("temperature", "top_p", "presence_penalty", "frequency_penalty"):
            if settings.get(key) is not None and not isinstance(settings[key], (int, float)):
                raise AgentConfigError(f"options.model_settings.{key}", "must be a number")
        for key in ("max_output_tokens", "top_k", "max_retries", "seed"):
            value = settings.get(key)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise AgentConfigError(f"options.model_settings.{key}", "must be a non-negative integer")
        retries = settings.get("max_retries")
        if retries is not None and retries > limits.max_retries:
            raise AgentConfigError("options.model_settings.max_retries", f"must be at most {limits.max_retries}")
        stops = settings.get("stop_sequences")
        if stops is not None and (not isinstance(stops, list) or not all(isinstance(s, str) for s in stops)):
            raise AgentConfigError("options.model_settings.stop_sequences", "must be a list of strings")
        options["model_settings"] = settings
    if is_chain(options.get("model")):
        chain_check(options["model"], "options.model")
    choice = options.get("tool_choice")
    if choice is not None:
        if isinstance(choice, dict):
            choice = snake_keys(choice)
            if choice.get("type") != "tool" or not isinstance(choice.get("tool_name"), str):
                raise AgentConfigError("options.tool_choice", "a dict tool choice must be {'type': 'tool', 'tool_name': <name>}")
            options["tool_choice"] = choice
        elif choice not in ("auto", "none", "required"):
            raise AgentConfigError("options.tool_choice", "must be 'auto', 'none', 'required' or {'type': 'tool', 'tool_name': ...}")
    active = options.get("active_tools")
    if active is not None and (not isinstance(active, (list, tuple)) or not all(isinstance(a, str) for a in active)):
        raise AgentConfigError("options.active_tools", "must be a list of tool names")
    hooks = options.get("hooks")
    if hooks is not None:
        validate_hooks(hooks, "options.hooks")
        options["hooks"] = snake_keys(hooks)
    memory = options.get("memory")
    if memory is not None:
        options["memory"] = validate_memory_option(memory)
    structured = options.get("structured_output")
    if structured is not None:
        if not isinstance(structured, dict):
            raise AgentConfigError("options.structured_output", "must be a dict with a 'schema'")
        structured = snake_keys(structured)
        bad = set(structured) - STRUCTURED_KEYS
        if bad:
            raise AgentConfigError(f"options.structured_output.{sorted(bad)[0]}", "unknown key")
        if "schema" not in structured:
            raise AgentConfigError("options.structured_output.schema", "is required")
        # compiled now so that a bad schema (a $ref outside it, above all) is refused before the run
        Schema(structured["schema"], field_name="options.structured_output.schema")
        strategy = structured.get("error_strategy", "strict")
        if strategy not in ("strict", "warn", "fallback"):
            raise AgentConfigError("options.structured_output.error_strategy", "must be 'strict', 'warn' or 'fallback'")
        if strategy == "fallback" and "fallback_value" not in structured:
            raise AgentConfigError("options.structured_output.fallback_value", "is required with error_strategy 'fallback'")
        told = structured.get("logger")
        if told is not None and not all(callable(getattr(told, m, None)) for m in LOGGER_METHODS):
            raise AgentConfigError("options.structured_output.logger",
                                   "must be a logging.Logger (or an object with error, warning and info methods)")
        inj = structured.get("json_prompt_injection", "auto")
        if inj not in (True, False, "system", "inline", "auto"):
            raise AgentConfigError("options.structured_output.json_prompt_injection", "must be a bool, 'system', 'inline' or 'auto'")
        options["structured_output"] = structured
    rc = options.get("request_context")
    if rc is not None and not isinstance(rc, dict):
        raise AgentConfigError("options.request_context", "must be a dict")
    if options.get("run_id") is not None:
        id_check(options["run_id"], "options.run_id", MAX_RUN_ID, error=AgentConfigError)
    for name in ("toolsets",):
        value = options.get(name)
        if value is not None and (not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values())):
            raise AgentConfigError(f"options.{name}", "must be a dict of {toolset name: {tool name: tool}}")
    if options.get("client_tools") is not None and not isinstance(options["client_tools"], dict):
        raise AgentConfigError("options.client_tools", "must be a dict of {tool name: tool}")
    if options.get("versions") is not None:
        options["versions"] = validate_versions(options["versions"])
    po = options.get("provider_options")
    if po is not None and not isinstance(po, dict):
        raise AgentConfigError("options.provider_options", "must be a dict of {provider: {option: value}}")
    surface_options_check(options)
    return options


def validate_hooks(hooks: Any, field: str) -> None:
    if not isinstance(hooks, dict):
        raise AgentConfigError(field, "must be a dict with before_tool_call / after_tool_call")
    for name, func in snake_keys(hooks).items():
        if name not in HOOK_NAMES:
            raise AgentConfigError(f"{field}.{name}", "unknown hook (expected before_tool_call or after_tool_call)")
        if func is not None and not callable(func):
            raise AgentConfigError(f"{field}.{name}", "must be callable")


def validate_memory_option(memory: Any) -> dict:
    memory = option_dict(memory, "options.memory", MEMORY_KEYS, expected="must be a dict with 'resource' and 'thread'")
    id_check(memory.get("resource"), "options.memory.resource", MAX_RESOURCE_ID, error=AgentConfigError)
    thread = memory.get("thread")
    if isinstance(thread, dict):
        id_check(thread.get("id"), "options.memory.thread.id", MAX_THREAD_ID, error=AgentConfigError)
        if thread.get("title") is not None and not isinstance(thread["title"], str):
            raise AgentConfigError("options.memory.thread.title", "must be a string")
        if thread.get("metadata") is not None and not isinstance(thread["metadata"], dict):
            raise AgentConfigError("options.memory.thread.metadata", "must be a dict")
    elif not isinstance(thread, str) or not thread:
        raise AgentConfigError("options.memory.thread", "must be a thread id or {id, title, metadata}")
    else:
        id_check(thread, "options.memory.thread", MAX_THREAD_ID, error=AgentConfigError)
    opts = memory.get("options") or {}
    opts = option_dict(opts, "options.memory.options", MEMORY_OPTION_KEYS, unknown="unknown memory option")
    lm = opts.get("last_messages")
    if lm is not None and lm is not False and (not isinstance(lm, int) or isinstance(lm, bool) or lm < 0):
        raise AgentConfigError("options.memory.options.last_messages", "must be a non-negative integer or False")
    memory["options"] = opts
    cb = memory.get("on_title_generated")
    if cb is not None and not callable(cb):
        raise AgentConfigError("options.memory.on_title_generated", "must be callable")
    return memory


def step_count_is(count: int) -> Callable:
    """Stop condition: stop once ``count`` steps have run."""
    def condition(ctx: dict) -> bool:
        return len(ctx["steps"]) >= count
    condition.__name__ = f"step_count_is({count})"
    return condition


def has_tool_call(tool_name: str) -> Callable:
    """Stop condition: stop after a step in which the model called ``tool_name``."""
    def condition(ctx: dict) -> bool:
        steps = ctx["steps"]
        return bool(steps) and any(c["payload"]["toolName"] == tool_name for c in steps[-1].tool_calls)
    condition.__name__ = f"has_tool_call({tool_name!r})"
    return condition
