"""Celery tasks and the agents of the workflow tests (also imported by a real Celery worker:
``MASTRA=tests.agents.workflow_support:mastra``). The model is ``local/echo``: a ``/tool`` line makes
it call a workflow, and it answers with the tool's result."""

from __future__ import annotations

import os
import time

from celery import chain, chord, group, shared_task

from agents.memory import Memory
from agents.runtime import Agent, Mastra
from agents.runtime.workflows import create_workflow
from agents.workflows import celery_workflow

INPUT = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


@shared_task(name="tests.workflows.add_one")
def add_one(data):
    return data["n"] + 1


@shared_task(name="tests.workflows.double")
def double(value):
    return value * 2


@shared_task(name="tests.workflows.square")
def square(data):
    return data["n"] ** 2


@shared_task(name="tests.workflows.total")
def total(values):
    return sum(values)


@shared_task(name="tests.workflows.slow_double")
def slow_double(data):
    time.sleep(float(os.environ.get("WORKFLOW_TEST_SLOW_S", "1.5")))
    return data["n"] * 2


@shared_task(name="tests.workflows.fail")
def fail(data):
    raise ValueError(f"cannot handle {data['n']}")


async def count_up(input, context):
    return {"counted": list(range(input["n"]))}


def build_agent() -> Agent:
    return Agent(id="planner", instructions="Run workflows.", model="local/echo", memory=Memory(), workflows={
        "chain": celery_workflow(id="chain", canvas=chain(add_one.s(), double.s()), input_schema=INPUT,
                                 description="Add one, then double."),
        "group": celery_workflow(id="group", canvas=group(add_one.s(), square.s()), input_schema=INPUT),
        "chord": celery_workflow(id="chord", canvas=chord([add_one.s(), square.s()], total.s()), input_schema=INPUT),
        "slow": celery_workflow(id="slow", canvas=slow_double.s(), input_schema=INPUT,
                                wait_s=float(os.environ.get("WORKFLOW_TEST_WAIT_S", "0.2"))),
        "fail": celery_workflow(id="fail", canvas=fail.s(), input_schema=INPUT),
        "count": create_workflow(id="count", execute=count_up, input_schema=INPUT),
    })


planner = build_agent()
mastra = Mastra(agents={"planner": planner})
