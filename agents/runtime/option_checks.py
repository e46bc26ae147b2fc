"""Checks of the call options whose feature lives in its own package (processors, delegation,
scoring, tracing); ``options.validate_options`` calls :func:`surface_options_check` last."""

from __future__ import annotations

from .delegation import delegation_check
from .errors import AgentConfigError
from .processors import processors_check
from .scoring import task_complete_check
from .tracing import tracing_context_check, tracing_options_check


def surface_options_check(options: dict) -> None:
    """Raise :class:`AgentConfigError` naming the option when one of them has a bad shape."""
    for name in ("input_processors", "output_processors"):
        if options.get(name) is not None:
            options[name] = processors_check(options[name], f"options.{name}")
    if options.get("delegation") is not None:
        options["delegation"] = delegation_check(options["delegation"])
    auto = options.get("auto_resume_suspended_tools")
    if auto is not None and not isinstance(auto, bool):
        raise AgentConfigError("options.auto_resume_suspended_tools", "must be a bool")
    if options.get("is_task_complete") is not None:
        options["is_task_complete"] = task_complete_check(options["is_task_complete"])
    if options.get("scorers") is not None and not isinstance(options["scorers"], dict):
        raise AgentConfigError("options.scorers", "must be a dict of {name: scorer or {'scorer': ..., 'sampling': ...}}")
    if options.get("return_scorer_data") is not None and not isinstance(options["return_scorer_data"], bool):
        raise AgentConfigError("options.return_scorer_data", "must be a bool")
    if options.get("tracing_options") is not None:
        options["tracing_options"] = tracing_options_check(options["tracing_options"])
    if options.get("tracing_context") is not None:
        options["tracing_context"] = tracing_context_check(options["tracing_context"])
    retries = options.get("max_processor_retries")
    if retries is not None and (not isinstance(retries, int) or isinstance(retries, bool) or retries < 0):
        raise AgentConfigError("options.max_processor_retries", "must be a non-negative integer")


__all__ = ["surface_options_check"]
