"""One channel webhook request, from its signed bytes to its reply: :func:`channel_webhook_receive`.

``POST /api/agents/<agentId>/channels/<platform>/webhook``. The steps, in order:

1. the agent's adapter for the platform (``channel_not_found``, 404; no database);
2. the platform's signature (``invalid_signature``, 401): nothing is parsed or stored before;
3. what the request means (:mod:`agent_channels.slack`, :mod:`agent_channels.github`): a reply the
   platform expects at once (Slack's ``url_verification`` challenge, GitHub's ``ping``), a click
   on an approval card (decided here, :mod:`agent_channels.approvals`), an event that is not
   answered (200 ``ignored``: the platform must not retry it), or a message;
4. a message is stored once (:func:`event_store`, one database call): unique on its event id and
   on its platform message, so a retry, a redelivery, the same message as ``app_mention`` and
   ``message``, or two processes receiving copies at once store it once; the copies answer 200
   ``duplicate``. A message in a thread the agent does not take part in (a Slack channel thread
   without a mention, a GitHub conversation without ``@bot_login``) is ``ignored``;
5. 200 ``accepted``; the run happens after (:mod:`agent_channels.handoff`), started by this process
   at once (``MASTRA_CHANNELS_HANDOFF_INLINE``, the default) or by whichever process runs the
   channels' work next.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Mapping

from django.conf import settings
from django.db import IntegrityError, transaction

from agents.connections import POOL, async_twin

from . import github, slack
from .adapters import channel_adapter
from .approvals import slack_click
from .exceptions import InvalidSignature
from .handoff import hand_off_soon
from .inbound import ACTION, Inbound
from .models import ChannelEvent, ChannelThread

logger = logging.getLogger(__name__)

PLATFORM_MODULES = {"slack": slack, "github": github}


@dataclass(frozen=True)
class ChannelReply:
    status: int
    body: dict


def event_store(*, agent_id: str, platform: str, inbound: Inbound) -> tuple[str, int | None]:
    """Store a message once: ``("accepted", event id)``, ``("duplicate", None)`` or
    ``("ignored", None)`` (``needs_thread`` and the agent has no such thread)."""
    thread = None
    if inbound.needs_thread:
        thread = ChannelThread.objects.filter(agent_id=agent_id, platform=platform,
                                              key=inbound.thread_key).values_list("pk", flat=True).first()
        if thread is None:
            return "ignored", None
    payload = {**inbound.payload, "thread_key": inbound.thread_key, "target": inbound.target,
               "bucket": inbound.bucket}
    try:
        with transaction.atomic():
            event = ChannelEvent.objects.create(agent_id=agent_id, platform=platform, event_id=inbound.event_id[:255],
                                                message_key=inbound.message_key, kind=inbound.kind, payload=payload,
                                                channel_thread_id=thread)
    except IntegrityError:
        return "duplicate", None
    return "accepted", event.pk


#: on a thread of its own: the reply waits for this one write only, never behind the runs' database work
aevent_store = async_twin(event_store, thread=POOL)


async def channel_webhook_receive(*, agent_id: str, platform: str, headers: Mapping[str, str],
                                  raw: bytes) -> ChannelReply:
    """Receive one platform request (see the module docstring); errors are the runtime's
    (``channel_not_found``, ``invalid_signature``, ``invalid_payload``, ``invalid_json``, ...)."""
    agent, adapter = channel_adapter(agent_id, platform)
    module = PLATFORM_MODULES[platform]
    problem = module.verify(adapter, headers, raw)
    if problem is not None:
        logger.warning("%s channel of %s refused a request: %s", platform, agent_id, problem)
        raise InvalidSignature(problem)
    inbound = module.inbound(adapter, headers, raw)
    if inbound.reply is not None:
        return ChannelReply(200, inbound.reply)
    if inbound.ignored:
        logger.info("%s channel of %s: %s", platform, agent_id, inbound.ignored)
        return ChannelReply(200, {"ok": True, "status": "ignored", "reason": inbound.ignored})
    if inbound.kind == ACTION:
        decided = await slack_click(agent, adapter, inbound.payload)
        return ChannelReply(200, {"ok": True, "status": decided.outcome})
    outcome, event_id = await aevent_store(agent_id=agent_id, platform=platform, inbound=inbound)
    if outcome == "accepted" and settings.MASTRA_CHANNELS_HANDOFF_INLINE:
        hand_off_soon(event_id)
    elif outcome == "ignored":
        logger.info("%s channel of %s: %s outside a thread it takes part in", platform, agent_id, inbound.kind)
    return ChannelReply(200, {"ok": True, "status": outcome})


__all__ = ["ChannelReply", "PLATFORM_MODULES", "channel_webhook_receive", "event_store"]
