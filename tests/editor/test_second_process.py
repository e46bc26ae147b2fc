"""A publish reaches the next run of another, already running process without a restart."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.editor.services import version_publish, version_rollback, version_save

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("run_worker.py")
REFRESH_MS = 200

pytestmark = pytest.mark.django_db(transaction=True)


class Worker:
    def __init__(self, db_url: str):
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "MASTRA")}
        env.update({"DJANGO_SETTINGS_MODULE": "mastra_site.settings", "DATABASE_URL": db_url,
                    "MASTRA": "tests.editor.editor_agents:mastra", "MASTRA_EDITOR_REFRESH_MS": str(REFRESH_MS),
                    "LOG_LEVEL": "WARNING", "PYTHONUNBUFFERED": "1",
                    "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)})
        self.proc = subprocess.Popen([sys.executable, str(WORKER)], cwd=str(ROOT), env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.ready = json.loads(self.proc.stdout.readline() or '{"event": "died"}')
        assert self.ready["event"] == "ready", self.proc.stderr.read()

    def run(self, agent: str, versions=None) -> dict:
        self.proc.stdin.write(json.dumps({"agent": agent, "versions": versions}) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture
def worker(editor_site, db_url_for_subprocess):
    process = Worker(db_url_for_subprocess)
    yield process
    process.stop()


def after_refresh() -> None:
    time.sleep(REFRESH_MS / 1000 * 1.5)


def test_a_publish_reaches_the_next_run_of_another_process(worker):
    first = worker.run("free")
    assert first["text"] == "system: Code free. | tools: alpha=The alpha tool., beta=The beta tool."
    v1 = version_save(agent_id="free", changes={"instructions": "Published in the admin."}, based_on_id=None)
    after_refresh()
    assert worker.run("free")["text"].startswith("system: Code free. |")  # a draft changes nothing
    assert worker.run("free", {"agents": {"free": {"status": "draft"}}})["text"].startswith(
        "system: Published in the admin. |")
    version_publish(version_id=v1.pk)
    after_refresh()
    published = worker.run("free")
    assert published["text"] == "system: Published in the admin. | tools: alpha=The alpha tool., beta=The beta tool."
    assert published["pid"] == first["pid"]
    version_rollback(agent_id="free", to_version_id=None)
    after_refresh()
    rolled_back = worker.run("free")
    assert rolled_back["text"].startswith("system: Code free. |")
    # the published overrides were read once per generation seen (start, publish, roll back)
    assert rolled_back["loads"] == 3
