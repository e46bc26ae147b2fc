"""Workflows an agent can run: each is a tool ``workflow-<key>`` the model may call.

A workflow is built with :func:`create_workflow` from an ``execute(input, context)`` callable (sync
or async) and an ``input_schema``; a plain callable is accepted too (no schema). ``execute`` may
suspend the call with ``context.suspend(payload)`` when its work outlives the step (a Celery canvas
still running: ``agents.workflows.celery_workflow``): the run ends ``suspended`` and continues when
the result is handed back with ``resume_generate({"result": ...})`` — ``execute`` then runs again
with ``context.resume_data`` and returns it.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from .errors import AgentConfigError
from .tools import Tool, create_tool

#: a workflow runs longer than a tool may: the call waits up to this long before it fails
WORKFLOW_TIMEOUT_S = 3600.0


class Workflow:
    """A workflow the model can start (see the module docstring)."""

    def __init__(self, *, id: str, execute: Callable, description: str = "", input_schema: Any = None,
                 resume_schema: Any = None, timeout_s: float = WORKFLOW_TIMEOUT_S):
        if not isinstance(id, str) or not id.strip():
            raise AgentConfigError("workflow.id", "must be a non-empty string")
        if not callable(execute):
            raise AgentConfigError(f"workflow {id!r}.execute", "must be callable")
        self.id = id
        self.description = description
        self.execute = execute
        self.input_schema = input_schema
        self.resume_schema = resume_schema
        self.timeout_s = timeout_s

    def tool(self, key: str) -> Tool:
        """The tool the model sees for this workflow under ``key``."""
        async def execute(input: Any, context: Any) -> Any:
            value = self.execute(input, context)
            return await value if inspect.isawaitable(value) else value

        return create_tool(id=f"workflow-{self.id}", description=self.description or f"Workflow: {key}",
                           input_schema=self.input_schema, resume_schema=self.resume_schema, execute=execute,
                           timeout_s=self.timeout_s)

    def __repr__(self) -> str:
        return f"<Workflow {self.id}>"


def create_workflow(*, id: str, execute: Callable, description: str = "", input_schema: Any = None,
                    resume_schema: Any = None, timeout_s: float = WORKFLOW_TIMEOUT_S) -> Workflow:
    """A workflow from ``execute(input, context)`` (sync or async)."""
    return Workflow(id=id, execute=execute, description=description, input_schema=input_schema,
                    resume_schema=resume_schema, timeout_s=timeout_s)


def workflows_check(value: Any, field: str) -> dict[str, Workflow]:
    """``{key: Workflow}`` from ``{key: Workflow | callable}``; raises :class:`AgentConfigError`."""
    if not isinstance(value, dict):
        raise AgentConfigError(field, "must be a dict of {name: workflow}")
    out = {}
    for key, workflow in value.items():
        if not isinstance(key, str) or not key:
            raise AgentConfigError(field, "workflow names must be non-empty strings")
        if isinstance(workflow, Workflow):
            out[key] = workflow
        elif callable(workflow):
            out[key] = Workflow(id=key, execute=workflow)
        else:
            raise AgentConfigError(f"{field}.{key}", "must be a workflow (create_workflow, celery_workflow) or a callable")
    return out


__all__ = ["WORKFLOW_TIMEOUT_S", "Workflow", "create_workflow", "workflows_check"]
