"""The processor protocol: objects with any of four optional hooks, run in order around a run.

A processor is any object with an ``id`` (a string naming it in tripwires and errors) and at least
one of these methods, sync or async, called with keyword arguments (a hook declares only the ones it
needs, or ``**kwargs`` for all):

- ``process_input(messages, abort, request_context, state)`` — once, before the first model step;
  return a new list of messages (the conversation the run sends) or None to keep them.
- ``process_input_step(messages, step_number, steps, abort, request_context, send_signal, state)`` —
  before each model step; return the step's messages or None.
- ``process_output_stream(chunk, abort, request_context, state)`` — each chunk before it is emitted;
  return the chunk (changed or not), None to drop it, or a list of chunks to emit instead.
- ``process_output_result(messages, text, abort, request_context, state)`` — once at the end; return
  the result text, or None to keep it (it may change the response ``messages`` in place: they are
  what memory saves).

``abort(reason, retry=False, metadata=None)`` ends the run with a tripwire (``result.tripwire`` and a
``tripwire`` chunk), or with ``retry=True`` asks the model to redo the step with ``reason`` as
feedback, at most ``max_processor_retries`` times. ``state`` is a dict private to the processor for
the run (processors are shared by every run of an agent). Any other exception out of a hook ends
the run with a :class:`ProcessorError` (code ``processor_error``) naming the processor and hook.

A :class:`ProcessorPipeline` composes processors into one: it runs its members in order, each with
its own ``abort`` and ``state``, wherever a processor is accepted.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Iterable

from ..errors import AgentConfigError

HOOKS = ("process_input", "process_input_step", "process_output_stream", "process_output_result")
#: hooks of the thread state channels (``compute_state_signal``), also accepted as a processor
STATE_HOOKS = ("compute_state_signal",)


class Processor:
    """Optional base class naming the protocol (subclass it and define the hooks you need)."""

    id = "processor"


class ProcessorPipeline:
    """Several processors as one, run in the order given (nested pipelines are flattened)."""

    def __init__(self, processors: Iterable[Any], *, id: str = "pipeline"):
        self.id = id
        self.processors = processors_check(list(processors), f"pipeline {id!r}")

    def flatten(self) -> list:
        return processors_flatten(self.processors)

    def __repr__(self) -> str:
        return f"<ProcessorPipeline {self.id} {[processor_id(p) for p in self.processors]}>"


def processor_id(processor: Any) -> str:
    """The name a processor goes by in tripwires and errors (its ``id``, else its class name)."""
    value = getattr(processor, "id", None)
    return value if isinstance(value, str) and value else type(processor).__name__


def processors_check(processors: Any, field: str) -> list:
    """``processors`` when it is a list of processors (objects with at least one hook, or
    pipelines); raises :class:`AgentConfigError` naming ``field`` and the index otherwise."""
    if not isinstance(processors, (list, tuple)):
        raise AgentConfigError(field, "must be a list of processors")
    for index, processor in enumerate(processors):
        if isinstance(processor, ProcessorPipeline):
            continue
        if not any(callable(getattr(processor, name, None)) for name in HOOKS + STATE_HOOKS):
            raise AgentConfigError(f"{field}[{index}]", "is not a processor (it has none of "
                                   + ", ".join(HOOKS) + ")")
    return list(processors)


def processors_flatten(processors: Iterable[Any]) -> list:
    """The processors to run, in order, with every pipeline replaced by its members."""
    out: list = []
    for processor in processors:
        if isinstance(processor, ProcessorPipeline):
            out.extend(processor.flatten())
        else:
            out.append(processor)
    return out


_ACCEPTS: dict[Any, frozenset | None] = {}


def hook_call(hook: Callable, kwargs: dict) -> Any:
    """Call ``hook`` with the keyword arguments it declares (all of them when it takes ``**kwargs``)."""
    key = getattr(hook, "__func__", hook)
    if key not in _ACCEPTS:
        try:
            params = inspect.signature(hook).parameters.values()
        except (TypeError, ValueError):
            params = ()
        if not params or any(p.kind == p.VAR_KEYWORD for p in params):
            _ACCEPTS[key] = None
        else:
            _ACCEPTS[key] = frozenset(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))
    accepted = _ACCEPTS[key]
    if accepted is not None:
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
    return hook(**kwargs)


__all__ = ["HOOKS", "Processor", "ProcessorPipeline", "hook_call", "processor_id", "processors_check",
           "processors_flatten"]
