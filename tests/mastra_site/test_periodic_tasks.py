"""The periodic Celery tasks (beat's): a pass that meets a database outage is skipped with a
warning, never a task failure; the next tick does the work."""

from __future__ import annotations

import pytest
from django.db import OperationalError


def unavailable(*args, **kwargs):
    raise OperationalError('connection failed: FATAL:  database "site" is not currently accepting connections')


@pytest.mark.parametrize("task, module, name, skipped", [
    ("schedules.tasks.tick_task", "schedules.runner", "schedules_tick", "schedules tick skipped"),
    ("agent_channels.tasks.channels_work_task", "agent_channels.tasks", "channels_work", "channels work skipped"),
    ("inbox.tasks.dispatch_due_notifications_task", "inbox.tasks", "dispatch_due_notifications",
     "notification dispatch skipped"),
])
def test_a_beat_task_skips_its_pass_while_the_database_is_down(monkeypatch, caplog, task, module, name, skipped):
    import importlib

    async def down(*args, **kwargs):
        unavailable()

    monkeypatch.setattr(importlib.import_module(module), name, down)
    module_name, function = task.rsplit(".", 1)
    with caplog.at_level("WARNING"):
        assert getattr(importlib.import_module(module_name), function)() == {"skipped": "database_unavailable"}
    assert [r.levelname for r in caplog.records] == ["WARNING"]
    assert caplog.records[0].getMessage().startswith(skipped + ": the database is unavailable")


def test_any_other_failure_still_fails_the_task(monkeypatch):
    from schedules import runner, tasks

    async def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(runner, "schedules_tick", broken)
    with pytest.raises(RuntimeError):
        tasks.tick_task()
