"""Mastra's legacy call options, mapped onto the current ones before a run is built.

- ``output`` (deprecated in Mastra): a schema → ``structured_output={"schema": output}`` (no
  separate structuring model). Passing both is an error: one of them would be silently ignored.
- ``telemetry`` (AI SDK ``TelemetrySettings``: ``is_enabled``, ``record_inputs``, ``record_outputs``,
  ``function_id``) → ``tracing_options``: ``function_id`` goes to the trace's metadata,
  ``record_inputs=False`` / ``record_outputs=False`` become ``hide_input`` / ``hide_output`` and
  ``is_enabled=False`` keeps the run's spans out of every exporter (the ids are still given).
  Keys set in ``tracing_options`` itself win.
"""

from __future__ import annotations

from .errors import AgentConfigError
from .naming import option_dict, snake_keys

TELEMETRY_KEYS = frozenset({"is_enabled", "record_inputs", "record_outputs", "function_id"})


def legacy_options_apply(options: dict) -> dict:
    """Rewrite ``output`` and ``telemetry`` in ``options`` (snake_case keys) into their current
    spelling; raises :class:`AgentConfigError` naming the option on a bad shape."""
    if options.get("output") is not None:
        if options.get("structured_output") is not None:
            raise AgentConfigError("options.output", "is the legacy name of structured_output; pass only one of them")
        options["structured_output"] = {"schema": options["output"]}
    options.pop("output", None)
    telemetry = options.pop("telemetry", None)
    if telemetry is None:
        return options
    telemetry = option_dict(telemetry, "options.telemetry", TELEMETRY_KEYS,
                            expected="must be a dict (is_enabled, record_inputs, record_outputs, function_id)")
    for key in ("is_enabled", "record_inputs", "record_outputs"):
        if key in telemetry and not isinstance(telemetry[key], bool):
            raise AgentConfigError(f"options.telemetry.{key}", "must be a bool")
    if "function_id" in telemetry and not isinstance(telemetry["function_id"], str):
        raise AgentConfigError("options.telemetry.function_id", "must be a string")
    tracing = snake_keys(options.get("tracing_options") or {})
    mapped: dict = {}
    if "function_id" in telemetry:
        mapped["metadata"] = {"function_id": telemetry["function_id"], **(tracing.get("metadata") or {})}
    if telemetry.get("record_inputs") is False:
        mapped["hide_input"] = True
    if telemetry.get("record_outputs") is False:
        mapped["hide_output"] = True
    if telemetry.get("is_enabled") is False:
        mapped["export"] = False
    merged = {**mapped, **tracing}
    if "metadata" in mapped:  # function_id beside the caller's own metadata
        merged["metadata"] = mapped["metadata"]
    options["tracing_options"] = merged
    return options


__all__ = ["TELEMETRY_KEYS", "legacy_options_apply"]
