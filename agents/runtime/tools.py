"""Tools: ``create_tool`` and the validation that runs before ``execute``.

A tool's input and output schemas are JSON Schema dicts or pydantic model classes. Input is
validated before ``execute`` runs; a validation failure becomes a tool error the model sees (the
run goes on), never an exception out of ``generate()``.

A JSON Schema's ``$ref`` resolves inside the schema only (``#/$defs/...``, an embedded ``$id``, the
JSON Schema meta-schemas): nothing is ever fetched, and a schema with a reference that does not
resolve locally is refused when it is compiled (code ``invalid_schema``). A schema may come from a
caller (``structured_output`` over HTTP), and jsonschema's default would fetch any URL it names.
"""

from __future__ import annotations

import asyncio
import contextvars
import datetime
import decimal
import inspect
import logging
import math
import sys
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import AgentConfigError
from .transforms import tool_transform_check

logger = logging.getLogger(__name__)

try:  # pydantic is optional for the runtime; JSON Schema dicts work without it.
    import pydantic
except ImportError:  # pragma: no cover - pydantic is a declared dependency
    pydantic = None


class ToolTimeoutError(Exception):
    """A tool ran longer than its ``timeout_s``; the model sees it as the tool's error."""


class ToolValidationError(Exception):
    """Arguments or a result did not match the tool's schema (message says where)."""


class ToolSuspended(Exception):
    """Raised by ``context.suspend(payload)``: the tool stops here and its run ends ``suspended``
    until ``resume_generate`` / ``resume_stream`` (or an auto-resume) runs it again with
    ``context.resume_data``."""

    def __init__(self, payload: Any = None):
        super().__init__("tool suspended")
        self.payload = payload


def _is_pydantic_model(schema: Any) -> bool:
    return pydantic is not None and isinstance(schema, type) and issubclass(schema, pydantic.BaseModel)


def _refuse_retrieval(uri: str) -> Any:
    """The registry's ``retrieve``: a reference outside the schema is never fetched."""
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)


def _local_registry() -> Any:
    """An empty registry whose retrieval always fails (jsonschema adds the meta-schemas)."""
    from referencing import Registry

    return Registry(retrieve=_refuse_retrieval)


def _unresolvable_ref(cls: Any, source: dict, registry: Any) -> str | None:
    """The first ``$ref`` / ``$dynamicRef`` of ``source`` that does not resolve within it (nor to a
    meta-schema), or None. Walks every subschema with the ``$id`` scope the validator would use."""
    import referencing
    import referencing.jsonschema
    from jsonschema_specifications import REGISTRY as META_SCHEMAS
    from referencing.exceptions import Unresolvable

    specification = referencing.jsonschema.specification_with(
        cls.ID_OF(cls.META_SCHEMA) or "urn:unknown-dialect", default=referencing.Specification.OPAQUE)
    root = specification.create_resource(source)
    resolver = META_SCHEMAS.combine(registry).resolver_with_root(root)
    pending = [(root, resolver)]
    while pending:
        resource, scope = pending.pop()
        contents = resource.contents
        if isinstance(contents, dict):
            for keyword in ("$ref", "$dynamicRef"):
                ref = contents.get(keyword)
                if isinstance(ref, str):
                    try:
                        scope.lookup(ref)
                    except Unresolvable:
                        return ref
        pending.extend((sub, scope.in_subresource(sub)) for sub in resource.subresources())
    return None


class Schema:
    """A JSON Schema dict or a pydantic model, with one ``validate`` and one ``json_schema``.

    A JSON Schema's references resolve locally only (see the module docstring): a ``$ref`` to
    anything outside the schema raises :class:`AgentConfigError` with code ``invalid_schema``."""

    __slots__ = ("source", "json_schema", "_validator", "_fast", "_pydantic")

    def __init__(self, source: Any, *, field_name: str):
        self.source = source
        self._pydantic = None
        self._validator = None
        self._fast = None
        if _is_pydantic_model(source):
            self._pydantic = source
            self.json_schema = source.model_json_schema()
        elif isinstance(source, dict):
            import jsonschema

            try:
                cls = jsonschema.validators.validator_for(source)
                cls.check_schema(source)
            except jsonschema.SchemaError as exc:
                raise AgentConfigError(field_name, f"invalid JSON Schema: {exc.message}") from None
            registry = _local_registry()
            ref = _unresolvable_ref(cls, source, registry)
            if ref is not None:
                raise AgentConfigError(field_name, f"$ref {ref!r} does not resolve within the schema (references "
                                                   "are resolved locally only, never fetched)", code="invalid_schema")
            self.json_schema = source
            self._validator = cls(source, registry=registry)
            self._fast = _fast_validator(cls, source)
        else:
            raise AgentConfigError(field_name, "must be a JSON Schema dict or a pydantic model class")

    def validate(self, value: Any) -> Any:
        """Return the validated value (a model instance for pydantic) or raise ToolValidationError."""
        if self._pydantic is not None:
            if isinstance(value, self._pydantic):
                return value
            try:
                return self._pydantic.model_validate(value)
            except pydantic.ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in err['loc']) or '(root)'}: {err['msg']}" for err in exc.errors()
                )
                raise ToolValidationError(problems) from None
        fast = self._fast
        if fast is not None:
            try:
                if fast.is_valid(value):
                    return value
            except ValueError:  # a value jsonschema-rs cannot read (not JSON): jsonschema decides
                pass
        from referencing.exceptions import Unresolvable

        try:
            errors = sorted(self._validator.iter_errors(value), key=lambda e: list(e.absolute_path))
        except Unresolvable as exc:  # refused when compiled; kept as a validation error all the same
            raise ToolValidationError(f"a $ref of the schema does not resolve: {exc}") from None
        if errors:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err.absolute_path) or '(root)'}: {err.message}" for err in errors
            )
            raise ToolValidationError(problems)
        return value


def _fast_validator(cls: type, source: dict) -> Any:
    """jsonschema-rs's compiled validator of ``source`` under the draft jsonschema chose (``cls``),
    or None (a draft it lacks, a schema it refuses). It only accepts: a value it finds valid is
    valid; any other is left to jsonschema, which decides and words the errors. Where the two are
    known to differ, it is the stricter (it checks ``format`` under drafts 4 to 7, refuses NaN as a
    number, its ``\\d`` and ``\\w`` are ASCII), so the outcome stays jsonschema's, at a fiftieth of
    the time (0.15 µs against 7 µs for a small call's arguments). ``offline``: it fetches nothing."""
    try:
        import jsonschema_rs

        fast_cls = getattr(jsonschema_rs, cls.__name__, None)
        return fast_cls(source, offline=True) if fast_cls is not None else None
    except Exception:  # noqa: BLE001 - no fast path for this schema; jsonschema validates it alone
        return None


def to_jsonable(value: Any) -> Any:
    """Turn pydantic models (also nested in lists and dicts) into plain JSON data."""
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def strict_json(value: Any) -> Any:
    """``value`` as strict JSON data (what every store and wire accepts), or ``ValueError``.

    Dates and times become ISO 8601 strings, UUIDs strings, decimals strings (no precision lost), tuples
    and sets lists. Refused: NaN and infinities, complex numbers, integers too long to print
    (``sys.get_int_max_str_digits``), non-string keys, bytes and any other object.
    """
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, int):
        try:
            str(value)  # refuses (fast) past the interpreter's digit limit, as json.dumps would
        except ValueError:
            raise ValueError(f"an integer with more than {sys.get_int_max_str_digits()} digits") from None
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError(f"{value!r} is not a JSON number")
        return value
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"object key {key!r} is not a string")
            out[key] = strict_json(item)
        return out
    if isinstance(value, (list, tuple)):
        return [strict_json(item) for item in value]
    if isinstance(value, (set, frozenset)):
        return [strict_json(item) for item in sorted(value, key=repr)]
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (uuid.UUID, decimal.Decimal)):
        if isinstance(value, decimal.Decimal) and not value.is_finite():
            raise ValueError(f"{value!r} is not a JSON number")
        return str(value)
    raise ValueError(f"a value of type {type(value).__name__} ({value!r:.60})")


@dataclass
class ToolContext:
    """What ``execute(input, context)`` receives besides its input."""

    run_id: str
    tool_call_id: str
    agent_id: str | None = None
    thread_id: str | None = None
    resource_id: str | None = None
    request_context: dict = field(default_factory=dict)
    abort_signal: Any = None
    agent: Any = None
    #: ``context.suspend(payload)`` (awaited or not) stops the tool and suspends the run; the tool
    #: runs again on resume with the caller's data in ``resume_data`` (validated by ``resume_schema``)
    suspend: Callable | None = None
    resume_data: Any = None
    #: ``await context.send_signal(signal)`` injects a signal into the current run (thread runs).
    send_signal: Callable | None = None
    #: the supervisor run's side of a sub-agent call (``agents.runtime.delegation.DelegationSeam``)
    delegation: Any = None
    #: ``{"current_span": span}``: the tool call's span (``create_child_span`` for your own spans)
    tracing_context: Any = None
    #: the run's ``versions`` option (editor versions), passed on to sub-agent calls
    versions: dict | None = None


#: How long a tool may run before the model sees a timeout error (``create_tool(timeout_s=...)``).
DEFAULT_TOOL_TIMEOUT_S = 60.0
#: A ``quick`` sync tool runs on the event loop; a second call longer than this within
#: :data:`QUICK_TOOL_WINDOW` calls moves the tool to the worker thread for the rest of the process's
#: life (with a warning): it was not quick.
QUICK_TOOL_LIMIT_S = 0.002
#: How many calls back a quick tool's previous slow call still counts. One slow call alone is not
#: the tool's doing often enough to judge it: the call's wall time also holds the moments the
#: event loop's thread waited for the interpreter while another thread of the process (the
#: database worker, the trace and ledger writers) ran, or the kernel ran something else.
QUICK_TOOL_WINDOW = 8

_EMPTY_OBJECT = {"type": "object", "properties": {}, "additionalProperties": True}


#: keywords whose value is a schema, a list of schemas or a dict of schemas (``allOf`` is left
#: alone: closing each member would forbid the other members' properties)
_SUBSCHEMA = ("items", "additionalItems", "contains", "not", "if", "then", "else")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "prefixItems")
_SUBSCHEMA_DICTS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")


def closed_schema(schema: Any) -> Any:
    """A copy of the JSON Schema ``schema`` where each object schema (``"type": "object"`` or one
    with ``properties``) without ``additionalProperties`` gets ``"additionalProperties": false``,
    at any depth: what Mastra's tools send the model (zod objects drop unknown keys, and OpenAI's
    strict mode requires it). Validation keeps using the tool's own schema."""
    if isinstance(schema, list):
        return [closed_schema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in _SUBSCHEMA or (key == "additionalProperties" and isinstance(value, dict)):
            value = closed_schema(value)
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            value = [closed_schema(v) for v in value]
        elif key in _SUBSCHEMA_DICTS and isinstance(value, dict):
            value = {k: closed_schema(v) for k, v in value.items()}
        out[key] = value
    if (schema.get("type") == "object" or "properties" in schema) and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out


class Tool:
    """A callable the model can request. Build it with :func:`create_tool`."""

    def __init__(self, *, id: str, description: str = "", input_schema: Any = None,
                 output_schema: Any = None, execute: Callable | None = None,
                 require_approval: bool = False, provider_options: dict | None = None,
                 timeout_s: float = DEFAULT_TOOL_TIMEOUT_S, suspend_schema: Any = None, resume_schema: Any = None,
                 transform: Any = None, quick: bool = False):
        if not isinstance(id, str) or not id.strip():
            raise AgentConfigError("tool.id", "must be a non-empty string")
        if execute is not None and not callable(execute):
            raise AgentConfigError(f"tool {id!r}.execute", "must be callable")
        if not isinstance(description, str):
            raise AgentConfigError(f"tool {id!r}.description", "must be a string")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or not 0 < timeout_s <= 86_400:
            raise AgentConfigError(f"tool {id!r}.timeout_s", "must be a number of seconds in (0, 86400]")
        self.id = id
        self.timeout_s = float(timeout_s)
        self.description = description
        self.input_schema = Schema(input_schema, field_name=f"tool {id!r}.input_schema") if input_schema is not None else None
        self.output_schema = Schema(output_schema, field_name=f"tool {id!r}.output_schema") if output_schema is not None else None
        self.suspend_schema = Schema(suspend_schema, field_name=f"tool {id!r}.suspend_schema") if suspend_schema is not None else None
        self.resume_schema = Schema(resume_schema, field_name=f"tool {id!r}.resume_schema") if resume_schema is not None else None
        #: what display streams and transcripts show of this tool's payloads (``agents.runtime.transforms``)
        self.transform = tool_transform_check(transform, f"tool {id!r}.transform")
        self.execute = execute
        self.require_approval = bool(require_approval)
        self.provider_options = provider_options or {}
        self._execute_is_async = execute is not None and inspect.iscoroutinefunction(execute)
        #: a sync ``execute`` that runs on the event loop (no thread hand-off), see :func:`create_tool`
        self.quick = bool(quick) and not self._execute_is_async
        #: calls since this quick tool's last call over the limit (none yet: the window is past)
        self._since_slow = QUICK_TOOL_WINDOW
        self._execute_arity = _arity(execute) if execute is not None else 2
        self._parameters: dict | None = None  # ``parameters()``, computed once

    def parameters(self) -> dict:
        """The input schema the model receives: the tool's, with every object schema that does not
        say otherwise closed (``additionalProperties: false``), as Mastra sends a zod object."""
        if self.input_schema is None:
            return _EMPTY_OBJECT
        if self._parameters is None:
            self._parameters = closed_schema(self.input_schema.json_schema)
        return self._parameters

    def spec(self, name: str, description: str | None = None) -> dict:
        """The description a provider sends to the model for this tool under ``name``."""
        return {"name": name, "description": description if description is not None else self.description,
                "parameters": self.parameters()}

    @property
    def takes_context(self) -> bool:
        """Whether a call needs its :class:`ToolContext`: ``execute`` takes one, or the tool's class
        runs its calls itself (a sub-agent, for one)."""
        return self._execute_arity >= 2 or type(self).run is not Tool.run

    def validate_input(self, args: Any) -> Any:
        if self.input_schema is None:
            return args
        return self.input_schema.validate(args)

    async def run(self, args: Any, context: ToolContext | None) -> Any:
        """Validate, execute and validate the output. Exceptions propagate to the loop.

        A sync ``execute`` runs in a worker thread, so a slow tool never blocks the event loop (lease
        renewal, other runs, streaming). Either kind ends with :class:`ToolTimeoutError` after
        ``timeout_s`` seconds; a sync tool's thread cannot be interrupted and finishes in the
        background, its result discarded. The result must be strict JSON (see :func:`strict_json`).
        """
        if self.execute is None:
            raise ToolValidationError(f"tool {self.id!r} has no execute function (client tool)")
        value = self.validate_input(args)
        call_args = (value, context) if self._execute_arity >= 2 else (value,)
        try:
            if self.quick and not self._execute_is_async:
                # on the event loop: a timer could not fire during the call, so none is armed for it
                deadline = asyncio.get_running_loop().time() + self.timeout_s
                result = self._run_quick(call_args)
                if inspect.isawaitable(result):
                    async with asyncio.timeout_at(deadline):
                        result = await result
            else:
                async with asyncio.timeout(self.timeout_s):  # no extra task, unlike wait_for
                    if self._execute_is_async:
                        result = await self.execute(*call_args)
                    else:
                        run = contextvars.copy_context().run
                        loop = asyncio.get_running_loop()
                        result = await loop.run_in_executor(None, run, self.execute, *call_args)
                        if inspect.isawaitable(result):
                            result = await result
        except TimeoutError:
            raise ToolTimeoutError(f"tool {self.id!r} did not finish within {self.timeout_s:g} s") from None
        if self.output_schema is not None:
            try:
                self.output_schema.validate(to_jsonable(result) if not _is_pydantic_model(self.output_schema.source) else result)
            except ToolValidationError as exc:
                raise ToolValidationError(f"output does not match the tool's output schema: {exc}") from None
        try:
            return strict_json(to_jsonable(result))
        except ValueError as exc:
            raise ToolValidationError(f"output of tool {self.id!r} is not JSON: {exc}") from None

    def _run_quick(self, call_args: tuple) -> Any:
        """Run the quick sync ``execute`` here, on the event loop; a call over
        :data:`QUICK_TOOL_LIMIT_S` that follows another within :data:`QUICK_TOOL_WINDOW` calls ends
        the tool's quick status (later calls go to the thread)."""
        started = time.perf_counter()
        try:
            return self.execute(*call_args)
        finally:
            took = time.perf_counter() - started
            if took <= QUICK_TOOL_LIMIT_S:
                self._since_slow += 1
            elif self._since_slow < QUICK_TOOL_WINDOW:
                self.quick = False
                logger.warning("tool %r is marked quick but two of its calls took over %.0f ms (the last %.1f ms): "
                               "its calls run in the worker thread from now on", self.id,
                               QUICK_TOOL_LIMIT_S * 1000, took * 1000)
            else:
                self._since_slow = 0

    def __repr__(self) -> str:
        return f"<Tool {self.id}>"


def _arity(func: Callable) -> int:
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return 2
    count = 0
    for p in params:
        if p.kind in (p.VAR_POSITIONAL,):
            return 2
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


def create_tool(*, id: str, description: str = "", input_schema: Any = None, output_schema: Any = None,
                execute: Callable | None = None, require_approval: bool = False,
                provider_options: dict | None = None, timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
                suspend_schema: Any = None, resume_schema: Any = None, transform: Any = None,
                quick: bool = False) -> Tool:
    """Define a tool. ``execute(input, context)`` may be sync or async and may take only ``input``; a
    sync one runs in a worker thread, so that a slow one cannot hold up the event loop, unless
    ``quick=True``: a pure function that returns within :data:`QUICK_TOOL_LIMIT_S` (2 ms; no I/O, no
    database) then runs on the event loop itself, without the thread hand-off (a second call over
    the limit within :data:`QUICK_TOOL_WINDOW` calls moves the tool back to the thread, with a
    warning). A call running over ``timeout_s`` seconds
    ends as a tool error (a quick call cannot be interrupted: the limit is its guard).
    ``context.suspend(payload)`` pauses the run (``suspend_schema`` checks the payload); the resume data
    is checked by ``resume_schema``. ``transform`` changes what displays and transcripts show."""
    return Tool(id=id, description=description, input_schema=input_schema, output_schema=output_schema,
                execute=execute, require_approval=require_approval, provider_options=provider_options,
                timeout_s=timeout_s, suspend_schema=suspend_schema, resume_schema=resume_schema,
                transform=transform, quick=quick)
