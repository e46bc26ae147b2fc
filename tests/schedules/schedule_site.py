"""The site of the schedules tests: an echo agent with memory, one without, a workflow, and hooks
that record every call (``HOOK_CALLS``; ``PREPARE`` decides what ``prepare`` returns)."""

from __future__ import annotations

from agents.memory import Memory
from agents.runtime import Agent, Mastra
from agents.runtime.workflows import create_workflow

HOOK_CALLS: list[tuple[str, dict]] = []
#: what ``prepare`` returns for a schedule id (absent: ``{}``, the stored fields); an exception is raised
PREPARE: dict[str, object] = {}
WORKFLOW_INPUTS: list = []


def prepare(context: dict):
    HOOK_CALLS.append(("prepare", context))
    answer = PREPARE.get(context["schedule"].id, {})
    if isinstance(answer, Exception):
        raise answer
    return answer


async def on_finish(context: dict):
    HOOK_CALLS.append(("on_finish", context))


def on_error(context: dict):
    HOOK_CALLS.append(("on_error", context))


def on_abort(context: dict):
    HOOK_CALLS.append(("on_abort", context))


async def nightly(input, context):
    WORKFLOW_INPUTS.append((input, context.schedule_id))
    return {"ok": True}


echo = Agent(id="echo", name="Echo", instructions="Repeat.", model="local/echo", memory=Memory())
plain = Agent(id="plain", name="Plain", instructions="Repeat.", model="local/echo")

mastra = Mastra(agents={"echo": echo, "plain": plain}, workflows={"nightly": create_workflow(id="nightly", execute=nightly)},
                schedules={"prepare": prepare, "on_finish": on_finish, "on_error": on_error, "on_abort": on_abort})
