"""A process of the budget racing test: ``python -m tests.budgets.race_worker <runs> <limit>`` runs
``<runs>`` runs of resource ``alice`` at once, each a loop of tool steps of 10 tokens, against a
hard per-resource day budget of ``<limit>`` tokens kept in the database (``budgets.policy``), and
prints one JSON line: the model calls made and the runs refused."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import django


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    django.setup()
    from agents.runtime import Agent, Mastra, create_tool
    from agents.runtime.run_policy import RESOURCE_ID_KEY
    from agents.runtime.testing import ScriptedModel, tool_step
    from budgets.policy import DatabaseRunPolicy

    runs, limit = int(sys.argv[1]), int(sys.argv[2])
    ping = create_tool(id="ping", description="Ping.", input_schema={"type": "object"}, execute=lambda i: {"ok": True})
    models = [ScriptedModel([tool_step((f"c{n}", "ping", {}), usage=(6, 4), delay=0.002 * (n % 3))
                             for n in range(200)]) for _ in range(runs)]
    agents = [Agent(id=f"racer-{i}", instructions="Loop.", model=model, tools={"ping": ping})
              for i, model in enumerate(models)]
    Mastra(agents={a.id: a for a in agents}, policy=DatabaseRunPolicy(),
           budgets=[{"id": "alice-daily", "scope": "resource", "match": "alice", "unit": "tokens", "limit": limit}])

    async def race() -> list:
        return await asyncio.gather(*(agent.generate("go", max_steps=200, request_context={RESOURCE_ID_KEY: "alice"})
                                      for agent in agents))

    results = asyncio.run(race())
    print(json.dumps({"calls": sum(m.calls for m in models),
                      "refused": sum(1 for r in results if getattr(r.error, "code", None) == "budget_exceeded"),
                      "errors": [str(r.error) for r in results if r.error is not None
                                 and r.error.code != "budget_exceeded"]}))


if __name__ == "__main__":
    main()
