"""Schedules a site declares in code: created at start when missing, never overwritten (an
operator's pause, resume or edit stays)."""

from __future__ import annotations

import logging
from typing import Any

from agents.runtime.schedules import AGENT_SCHEDULE_PREFIX, WORKFLOW_SCHEDULE_PREFIX
from agents.runtime.schedules.definition import canonical_id

logger = logging.getLogger(__name__)


async def schedules_declare(mastra: Any, definitions: list[dict]) -> list[str]:
    """Create each of ``definitions`` (``mastra.schedules.create`` keyword arguments, with an ``id``)
    that does not exist yet; returns the ids created."""
    created = []
    for definition in definitions:
        prefix = WORKFLOW_SCHEDULE_PREFIX if definition.get("workflow_id") else AGENT_SCHEDULE_PREFIX
        if await mastra.schedules.get(canonical_id(definition["id"], prefix)) is not None:
            continue
        schedule = await mastra.schedules.create(**definition)
        logger.info("declared schedule %s created (%s)", schedule.id, schedule.status)
        created.append(schedule.id)
    return created
