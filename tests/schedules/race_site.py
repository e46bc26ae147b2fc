"""The racing test's site: one workflow that appends its fire's claim id to ``$FIRE_LOG``."""

from __future__ import annotations

import os

from agents.runtime import Mastra
from agents.runtime.workflows import create_workflow


def log_fire(input, context):
    with open(os.environ["FIRE_LOG"], "a") as log:
        log.write(f"{context.run_id}\n")


mastra = Mastra(workflows={"log": create_workflow(id="log", execute=log_fire)})
