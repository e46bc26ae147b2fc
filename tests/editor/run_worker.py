"""Another site process for ``test_second_process.py``: started as ``python run_worker.py`` with
``DATABASE_URL``, ``MASTRA=tests.editor.editor_agents:mastra`` and ``MASTRA_EDITOR_REFRESH_MS``.
Prints ``{"event": "ready", "pid": ...}``, then answers each stdin line ``{"agent": id, "versions": ...}``
with one stdout line ``{"text": <the run's text>, "pid": ..., "loads": <cache loads so far>}``."""

from __future__ import annotations

import json
import os
import sys

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mastra_site.settings")
django.setup()

from asgiref.sync import async_to_sync  # noqa: E402

from agents.editor.overrides import published_cache  # noqa: E402
from agents.registry import get_mastra  # noqa: E402


def main() -> None:
    print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        agent = get_mastra().get_agent(command["agent"])
        result = async_to_sync(agent.generate)("hi", versions=command.get("versions"))
        print(json.dumps({"text": result.text, "error": str(result.error) if result.error else None,
                          "pid": os.getpid(), "loads": published_cache.loads}), flush=True)


if __name__ == "__main__":
    main()
