"""One webhook request, from its signed bytes to its reply: :func:`webhook_receive`.

The steps, in order: the endpoint (``endpoint_not_found``, 404); its signature (``invalid_signature``,
401, no delivery stored); the sender's id (GitHub's ``X-GitHub-Delivery``, the ``event_id`` of a Slack
event: 400 without it); once per delivery id and once per event (a redelivery, or a replay of the
signed body under another delivery id or event name, answers 200 ``duplicate`` and stores nothing);
then the notification (200 ``stored``) or the reason it was ignored (202, logged).

Everything up to the claim is one call on the database's worker thread (:func:`webhook_accept`);
the notification goes through the agent's ``send_notification_signal``; the delivery's outcome is
one more write. A request refused on the way (404, 401, 400) or whose notification failed is
counted as a refusal with its reason (``inbox.webhooks.refusals``: bounded, whoever sends it).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from typing import Mapping
from urllib.parse import parse_qs

from agents.api.errors import status_for
from agents.api.parsing import json_object
from agents.connections import async_twin
from agents.runtime.errors import MastraError

from ..models import WebhookDelivery, WebhookEndpoint
from . import github, slack
from .events import PayloadError, WebhookEvent
from .refusals import awebhook_refusal_note, webhook_refusal_note
from .services import (webhook_delivery_claim, webhook_delivery_finish, webhook_delivery_release,
                       webhook_endpoint_get, webhook_notify)

logger = logging.getLogger(__name__)

#: a refused signature is logged once a minute per endpoint at most (each refusal is counted in the
#: refusals table anyway): a sender posting bad signatures in a loop must not flood the log
REFUSAL_LOG_EVERY_S = 60.0
_refusal_log: dict[tuple[str, str], list] = {}  # (source, name) -> [last logged (monotonic), not logged since]
_refusal_log_lock = threading.Lock()


def refusal_log(source: str, name: str, problem: str) -> None:
    """Log a refused signature, at most once per :data:`REFUSAL_LOG_EVERY_S` per endpoint; the line
    says how many refusals were left out since the last one."""
    now = time.monotonic()
    with _refusal_log_lock:
        state = _refusal_log.setdefault((source, name), [None, 0])
        if state[0] is not None and now - state[0] < REFUSAL_LOG_EVERY_S:
            state[1] += 1
            return
        skipped, state[0], state[1] = state[1], now, 0
    more = f" ({skipped} more refused since the last line)" if skipped else ""
    logger.warning("%s webhook %s refused: %s%s", source, name, problem, more)

#: the senders: how each one signs a request and what its request means
SOURCES = {"github": github, "slack": slack}


class EndpointNotFound(MastraError):
    code = "endpoint_not_found"


class InvalidSignature(MastraError):
    code = "invalid_signature"


@dataclass(frozen=True)
class WebhookReply:
    """What the sender gets: an HTTP status and a JSON body."""

    status: int
    body: dict


def sender_delivery_id(headers: Mapping[str, str]) -> str:
    """The delivery id a request claims in its headers (GitHub's; Slack's is in the body)."""
    return headers.get("X-GitHub-Delivery") or ""


def webhook_accept(*, source: str, name: str, headers: Mapping[str, str],
                   raw: bytes) -> tuple[WebhookEndpoint, WebhookEvent, WebhookReply | None]:
    """The steps up to the claim (see the module docstring): the endpoint, the event and, when the
    request ends here (a reply to the sender's handshake, a duplicate, an ignored event), its reply.
    ``headers`` is case-insensitive (``request.headers``). A refusal is counted before it is raised."""
    endpoint = webhook_endpoint_get(source=source, name=name)
    try:
        if endpoint is None:
            raise EndpointNotFound(f"no {source} webhook endpoint {name!r}")
        return webhook_check(endpoint, source=source, name=name, headers=headers, raw=raw)
    except MastraError as exc:
        webhook_refusal_note(source=source, name=name, endpoint=endpoint, code=exc.code, status=status_for(exc.code),
                             reason=exc.message, delivery_id=sender_delivery_id(headers))
        raise


def webhook_check(endpoint: WebhookEndpoint, *, source: str, name: str, headers: Mapping[str, str],
                  raw: bytes) -> tuple[WebhookEndpoint, WebhookEvent, WebhookReply | None]:
    sender = SOURCES[source]
    problem = sender.verify(endpoint, headers, raw)
    if problem is not None:
        refusal_log(source, name, problem)
        raise InvalidSignature(problem)
    event = sender.delivery_event(endpoint, headers, delivery_payload(headers, raw))
    if event.reply is not None and event.notification is None:
        return endpoint, event, WebhookReply(200, event.reply)
    # the sender's id is required above, so an event with a notification always has a key
    if event.event_key:
        outcome = WebhookDelivery.Outcome.IGNORED if event.notification is None else WebhookDelivery.Outcome.RECEIVED
        if not webhook_delivery_claim(endpoint=endpoint, delivery_id=event.delivery_id, event_key=event.event_key,
                                      event=event.event, outcome=outcome, reason=event.ignored):
            logger.info("%s webhook %s: delivery %s (%s) is a duplicate", source, name, event.delivery_id,
                        event.event_key)
            return endpoint, event, WebhookReply(200, {"ok": True, "status": "duplicate",
                                                       "deliveryId": event.delivery_id})
    if event.notification is None:
        logger.info("%s webhook %s ignored %s: %s", source, name, event.event, event.ignored)
        return endpoint, event, WebhookReply(202, {"ok": True, "status": "ignored", "reason": event.ignored})
    return endpoint, event, None


def delivery_payload(headers: Mapping[str, str], raw: bytes) -> dict:
    """The delivery's JSON object: the body, or, for a form-encoded body (GitHub's default content
    type, Slack's interactivity), its ``payload`` field. The signature was checked over the raw
    bytes before."""
    content_type = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        return json_object(raw)
    try:
        fields = parse_qs(raw.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except UnicodeDecodeError:
        raise PayloadError("the form body is not UTF-8") from None
    if len(fields.get("payload", [])) != 1:
        raise PayloadError("a form-encoded delivery needs exactly one payload field")
    return json_object(fields["payload"][0].encode("utf-8", "surrogatepass"))


awebhook_accept = async_twin(webhook_accept)
awebhook_delivery_finish = async_twin(webhook_delivery_finish)
awebhook_delivery_release = async_twin(webhook_delivery_release)


async def webhook_receive(*, source: str, name: str, headers: Mapping[str, str], raw: bytes) -> WebhookReply:
    """Receive one webhook request (see the module docstring); errors are the runtime's
    (``endpoint_not_found``, ``invalid_signature``, ``invalid_payload``, ...)."""
    endpoint, event, reply = await awebhook_accept(source=source, name=name, headers=headers, raw=raw)
    if reply is not None:
        return reply
    try:
        stored = await webhook_notify(endpoint, event)
    except BaseException as exc:
        if event.event_key:
            await awebhook_delivery_release(endpoint=endpoint, delivery_id=event.delivery_id)
        if isinstance(exc, Exception):
            code = exc.code if isinstance(exc, MastraError) else "internal_error"
            await awebhook_refusal_note(source=source, name=name, endpoint=endpoint, code=code,
                                        status=status_for(code) if isinstance(exc, MastraError) else 500,
                                        reason=f"{event.event}: the notification failed: {exc}",
                                        delivery_id=event.delivery_id)
        raise
    if event.event_key:
        await awebhook_delivery_finish(endpoint=endpoint, delivery_id=event.delivery_id,
                                       outcome=WebhookDelivery.Outcome.STORED, record_ids=[stored["recordId"]])
    return WebhookReply(200, {"ok": True, "status": "stored", **stored})


__all__ = ["EndpointNotFound", "InvalidSignature", "SOURCES", "WebhookReply", "delivery_payload", "webhook_accept",
           "webhook_receive"]
