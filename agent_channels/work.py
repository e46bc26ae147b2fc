"""One pass of the channels' background work, in the order a message travels: hand received
events to the agents, relay runs' chunks to the outbox, send what is due. The in-process scheduler
(``mastra_site.workers``, every ``MASTRA_CHANNELS_POLL_MS``) and Celery beat (``channels-work``)
run it; every step claims its rows, so any number of processes may run it together."""

from __future__ import annotations

import logging
from datetime import datetime

from .handoff import events_hand_off_due
from .outbox import outbox_send_due
from .relay import relay_due

logger = logging.getLogger(__name__)


async def channels_work(*, now: datetime | None = None) -> dict:
    """Hand off, relay and send once; the counts of each step."""
    handed = await events_hand_off_due(now=now)
    relayed = await relay_due(now=now)
    sent = await outbox_send_due(now=now)
    return {"handed": handed, "relayed": relayed, "sent": sent}


__all__ = ["channels_work"]
