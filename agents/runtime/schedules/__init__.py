"""Schedules: agents (and workflows) that act on a cron, as Mastra's ``mastra.schedules``.

One module per job:

- ``cron``: expressions (5, 6 or 7 fields, nicknames) and fire times in a time zone;
- ``records``: :class:`Schedule`, :class:`Trigger` and their wire form;
- ``definition``: create and update validation, id normalization;
- ``misfire``: which due fires run and which are recorded as skipped;
- ``execute``: one fire (hooks, ``generate`` or a signal into the thread);
- ``store``: the :class:`ScheduleStore` protocol and the process's store;
- ``schedules``: :class:`Schedules`, the API on the ``Mastra`` instance.

Who claims and runs fires (exactly once across processes) is the ``schedules`` Django app's job.
"""

from .cron import CronError, cron_check, fire_times, next_fire_after, next_fire_times, zone
from .definition import ScheduleError, ScheduleNotFound
from .execute import FireResult, execute_schedule_fire, execute_workflow_fire
from .misfire import FirePlan, PlannedFire, plan_due_fires
from .records import (AGENT_SCHEDULE_PREFIX, FINAL_OUTCOMES, MISFIRE_POLICIES, WORKFLOW_SCHEDULE_PREFIX, RunReceipt,
                      Schedule, ScheduleFilter, Trigger, from_ms, to_ms)
from .schedules import Schedules
from .store import ScheduleStore, get_schedule_store, set_schedule_store

HOOKS = ("prepare", "on_finish", "on_error", "on_abort")

__all__ = ["AGENT_SCHEDULE_PREFIX", "CronError", "FINAL_OUTCOMES", "FirePlan", "FireResult", "HOOKS",
           "MISFIRE_POLICIES", "PlannedFire", "RunReceipt", "Schedule", "ScheduleError", "ScheduleFilter",
           "ScheduleNotFound", "ScheduleStore", "Schedules", "Trigger", "WORKFLOW_SCHEDULE_PREFIX", "cron_check",
           "execute_schedule_fire", "execute_workflow_fire", "fire_times", "from_ms", "get_schedule_store", "next_fire_after",
           "next_fire_times", "plan_due_fires", "set_schedule_store", "to_ms", "zone"]
