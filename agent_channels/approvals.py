"""Deciding an approval card from the platform: a Slack button click (``block_actions``) or a
GitHub ``/approve`` / ``/deny`` reply.

:func:`approval_decide` is the one decision, in one transaction under the card's row lock:

1. the click is bound to the card's (run, tool call id, args hash): a value that does not match
   is ``stale``;
2. only an allowed approver decides (the adapter's ``approvers``: a list or a callable; by default
   the user whose message started the run on Slack, users with write access on GitHub): anyone
   else is ``refused``;
3. a card decided before is ``already-decided``; a card whose run no longer waits on that exact
   call (it moved on, ended, or its arguments changed) is ``stale`` (and the card says so);
4. else the card is decided (``approved`` / ``declined``, by whom, where) and updated at once so
   it cannot be clicked again, and the run continues through the agent's ``approve_tool_call`` /
   ``decline_tool_call`` (a decline never runs the tool).

Every click or command is recorded as a :class:`ChannelDecision` with its outcome (the admin lists
them); any outcome but ``accepted`` gets an ephemeral message on Slack (a reply on GitHub) and
executes nothing.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from agents.connections import async_twin
from agents.models import ToolApproval
from agents.runtime.errors import MastraError

from . import github
from .cards import APPROVE, DENY, card_decided
from .models import ChannelApproval, ChannelDecision, ChannelRun, ChannelThread, OutboxMessage
from .outbox import outbox_put
from .relay import bucket_of

logger = logging.getLogger(__name__)

MESSAGES = {
    ChannelDecision.Outcome.REFUSED: "You are not allowed to decide this approval.",
    ChannelDecision.Outcome.ALREADY_DECIDED: "This approval was already decided; nothing more was done.",
    ChannelDecision.Outcome.STALE: "This approval card is no longer current (the run moved on); nothing was done.",
}


@dataclass(frozen=True)
class Decided:
    """What came of one click or command; with ``accepted``, the call to continue."""

    outcome: str
    run_id: str = ""
    tool_call_id: str = ""
    resource_id: str = ""
    thread_id: str = ""
    approval_id: int | None = None


def allowed(adapter, approval: ChannelApproval, user: str, platform_allows: bool | None) -> bool:
    approvers = adapter.approvers
    if callable(approvers):
        return bool(approvers(user, {"tool_name": approval.tool_name, "args": approval.args,
                                     "run_id": approval.run_id, "requested_by": approval.requested_by}))
    if approvers is not None:
        return user in approvers
    if approval.platform == "slack":
        return bool(approval.requested_by) and user == approval.requested_by
    return bool(platform_allows)


def approval_decide(*, agent_id: str, platform: str, adapter, approval_id: int | None, bound: dict | None,
                    user: str, where: str, decision: str, platform_allows: bool | None = None,
                    reply_target: dict | None = None, now: datetime | None = None) -> Decided:
    """Decide the card ``approval_id`` (see the module docstring). ``bound``: the run, call and
    hash the click carried (None: a command, bound to the card itself). ``reply_target``: where
    a refusal is told (Slack: the channel, thread and user of an ephemeral message; GitHub: the
    issue). Raises nothing for a bad click: the outcome says it."""
    now = now or timezone.now()
    with transaction.atomic():
        approval = ChannelApproval.objects.select_for_update().filter(
            pk=approval_id, agent_id=agent_id, platform=platform).first() if approval_id is not None else None
        if approval is None:
            logger.warning("%s approval click by %s for an unknown card %s", platform, user, approval_id)
            return Decided(ChannelDecision.Outcome.STALE)
        if not approval.requested_by:  # the card was relayed before the handoff recorded the run's starter
            approval.requested_by = ChannelRun.objects.filter(run_id=approval.run_id).values_list(
                "requested_by", flat=True).first() or ""
        if bound is not None and (bound.get("run"), bound.get("call"), bound.get("hash")) != (
                approval.run_id, approval.tool_call_id, approval.args_hash):
            outcome = ChannelDecision.Outcome.STALE
        elif not allowed(adapter, approval, user, platform_allows):
            outcome = ChannelDecision.Outcome.REFUSED
        elif approval.status != ChannelApproval.Status.PENDING:
            outcome = (ChannelDecision.Outcome.STALE if approval.status == ChannelApproval.Status.STALE
                       else ChannelDecision.Outcome.ALREADY_DECIDED)
        else:
            waiting = ToolApproval.objects.filter(run_id=approval.run_id, tool_call_id=approval.tool_call_id,
                                                  status=ToolApproval.Status.PENDING).first()
            if waiting is None or waiting.args_hash != approval.args_hash:
                approval.status = ChannelApproval.Status.STALE
                outcome = ChannelDecision.Outcome.STALE
            else:
                approval.status = decision
                approval.decided_by, approval.decided_where, approval.decided_at = user, where[:255], now
                outcome = ChannelDecision.Outcome.ACCEPTED
            approval.save()
            card_update(approval, now)
        record = ChannelDecision.objects.create(approval=approval, user=user, where=where[:255],
                                                decision="approve" if decision == "approved" else "deny",
                                                outcome=outcome)
        if outcome != ChannelDecision.Outcome.ACCEPTED:
            refusal_put(approval, record, reply_target, now)
            return Decided(outcome, approval_id=approval.pk)
        thread = approval.channel_thread
        ChannelThread.objects.filter(pk=thread.pk).update(relay_open=True, last_activity_at=now)
        return Decided(outcome, approval.run_id, approval.tool_call_id, thread.resource_id, thread.thread_id,
                       approval.pk)


def card_update(approval: ChannelApproval, now: datetime) -> None:
    text, blocks = card_decided(approval, platform=approval.platform)
    thread = approval.channel_thread
    outbox_put(agent_id=approval.agent_id, platform=approval.platform, key=f"card:{approval.pk}",
               target=thread.target, bucket=bucket_of(thread), body=text, blocks=blocks,
               channel_thread_id=thread.pk, now=now)


def refusal_put(approval: ChannelApproval, record: ChannelDecision, target: dict | None, now: datetime) -> None:
    if target is None:
        return
    thread = approval.channel_thread
    text = MESSAGES[record.outcome]
    if approval.platform == "slack":
        outbox_put(agent_id=approval.agent_id, platform="slack", key=f"ephemeral:{record.pk}", target=target,
                   bucket=bucket_of(thread), body=text, op=OutboxMessage.Op.EPHEMERAL, channel_thread_id=thread.pk,
                   now=now)
    else:
        outbox_put(agent_id=approval.agent_id, platform="github", key=f"reply:{record.pk}", target=thread.target,
                   bucket=bucket_of(thread), body=f"@{record.user} {text}", channel_thread_id=thread.pk, now=now)


def approval_stale(*, approval_id: int) -> None:
    """The run refused the decision (it had moved on meanwhile): the card says so."""
    with transaction.atomic():
        approval = ChannelApproval.objects.select_for_update().filter(pk=approval_id).first()
        if approval is not None:
            approval.status = ChannelApproval.Status.STALE
            approval.save()
            card_update(approval, timezone.now())


def pending_card_of(*, agent_id: str, platform: str, thread_key_: str) -> int | None:
    """The latest pending card of a channel thread (what a ``/approve`` reply decides)."""
    return ChannelApproval.objects.filter(agent_id=agent_id, platform=platform, channel_thread__key=thread_key_,
                                          status=ChannelApproval.Status.PENDING).order_by("-created_at").values_list(
        "pk", flat=True).first()


aapproval_decide = async_twin(approval_decide)
aapproval_stale = async_twin(approval_stale)
apending_card_of = async_twin(pending_card_of)


async def decision_carry_out(agent, decided: Decided, decision: str) -> None:
    """Continue the run as decided; a refusal of the run marks the card stale."""
    method = agent.approve_tool_call if decision == "approved" else agent.decline_tool_call
    try:
        await method(run_id=decided.run_id, tool_call_id=decided.tool_call_id, resource_id=decided.resource_id,
                     thread_id=decided.thread_id)
    except MastraError as exc:
        logger.warning("approval %s could not continue its run: %s", decided.approval_id, exc)
        await aapproval_stale(approval_id=decided.approval_id)


async def slack_click(agent, adapter, payload: dict) -> Decided:
    """A Block Kit click on a card (``payload`` from :func:`agent_channels.slack.action_inbound`)."""
    action = payload["action"]
    if action not in (APPROVE, DENY):
        return Decided("ignored")
    decision = "approved" if action == APPROVE else "declined"
    value = payload["value"]
    approval_id = value.get("approval") if isinstance(value.get("approval"), int) else None
    where = f"slack:{payload['team']}:{payload['channel']}:{payload['message_ts']}"
    target = {"channel": payload["channel"], "user": payload["user"], "team": payload["team"]}
    decided = await aapproval_decide(agent_id=agent.id, platform="slack", adapter=adapter, approval_id=approval_id,
                                     bound=value, user=payload["user"], where=where, decision=decision,
                                     reply_target=target)
    if decided.outcome == ChannelDecision.Outcome.ACCEPTED:
        await decision_carry_out(agent, decided, decision)
    return decided


async def command_decide(agent, adapter, event: dict) -> Decided:
    """A GitHub ``/approve`` or ``/deny`` reply, decided on the thread's pending card."""
    payload = event["payload"]
    login, decision = payload["user"], payload["decision"]
    approval_id = await apending_card_of(agent_id=agent.id, platform="github", thread_key_=payload["thread_key"])
    if approval_id is None:
        logger.info("github: %s replied %s with no pending approval in %s", login, decision, payload["thread_key"])
        return Decided("ignored")
    platform_allows = None
    if adapter.approvers is None:
        platform_allows = await github.has_write_access(adapter.client(payload["target"].get("installation")),
                                                        repository=payload["target"]["repository"], login=login)
    decided = await aapproval_decide(agent_id=agent.id, platform="github", adapter=adapter, approval_id=approval_id,
                                     bound=None, user=login, where=payload.get("url") or payload["thread_key"],
                                     decision=decision, platform_allows=platform_allows,
                                     reply_target=payload["target"])
    if decided.outcome == ChannelDecision.Outcome.ACCEPTED:
        await decision_carry_out(agent, decided, decision)
    return decided


__all__ = ["Decided", "approval_decide", "command_decide", "slack_click"]
