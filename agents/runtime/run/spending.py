"""The run's side of the run policy (``agents.runtime.run_policy``): the checks before each model
call, the step's spend after it, the end. A run without a policy calls nothing here."""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

from ..budgets import RunScope
from ..chunks import data_chunk
from ..messages import new_id, now_iso
from ..errors import RunRefusedError
from ..run_policy import CHANNEL_KEY, RESOURCE_ID_KEY, StepSpend
from ..stored_messages import notice_entry

logger = logging.getLogger(__name__)


def scope_of(run: Any) -> RunScope:
    """The :class:`RunScope` of ``run``: its memory's resource and thread, else the resource its
    request context names (the API caller's); the channel its request context names."""
    memory = run.memory or {}
    context = run.request_context if isinstance(run.request_context, dict) else {}
    owner = context.get(RESOURCE_ID_KEY)
    channel = context.get(CHANNEL_KEY)
    return RunScope(run_id=run.run_id, agent_id=getattr(run.agent, "id", None) or "",
                    resource_id=memory.get("resource_id") or (owner if isinstance(owner, str) else "") or "",
                    thread_id=memory.get("thread_id") or "", channel=channel if isinstance(channel, str) else "")


async def spend_admit(agent: Any, options: dict) -> None:
    """Before a call of ``agent`` is started (an HTTP generate or stream): its site's policy
    refuses it at once (raises ``RunRefusedError``) when a hard budget of its scope is spent or a
    concurrency limit is full. ``options``: the call's (snake_case; ``memory`` and ``request_context``
    name its resource, thread and channel)."""
    mastra = getattr(agent, "mastra", None)
    policy = getattr(mastra, "policy", None)
    if policy is None:
        return
    memory = options.get("memory") or {}
    context = options.get("request_context") or {}
    owner, channel = context.get(RESOURCE_ID_KEY), context.get(CHANNEL_KEY)
    thread = memory.get("thread")
    scope = RunScope(run_id=options.get("run_id") or "", agent_id=agent.id,
                     resource_id=memory.get("resource") or (owner if isinstance(owner, str) else "") or "",
                     thread_id=(thread if isinstance(thread, str) else (thread or {}).get("id")) or "",
                     channel=channel if isinstance(channel, str) else "")
    await policy.admit(scope, mastra.budgets)


async def spend_check(run: Any) -> None:
    """Before a model call: the policy may refuse it (raises ``RunRefusedError``)."""
    if run.policy is not None:
        await run.policy.before_model_call(scope_of(run), run.budgets)


async def spend_record(run: Any, step: Any) -> None:
    """After a model step: its usage goes to the policy; each notice it returns is streamed
    (``data-budget-notice``) and kept for the thread (a notice entry saved with the run)."""
    if run.policy is None:
        return
    spend = StepSpend(model=step.model or "", usage=dict(step.usage), at=datetime.now(timezone.utc))
    notices = await run.policy.after_step(scope_of(run), run.budgets, spend)
    for notice in notices:
        data = notice.to_dict()
        await run.send(data_chunk("data-budget-notice", run.run_id, data))
        run.notices.append(notice_entry(message_id=new_id(), created_at=now_iso(),
                                        agent_id=getattr(run.agent, "id", None), run_id=run.run_id, notice=data))


async def side_call_refusal(run: Any) -> RunRefusedError | None:
    """Before a model call made for ``run`` outside its steps (its thread's title): the policy's
    refusal (a hard budget of the run's scope spent), or None when the call may be made."""
    check = getattr(run.policy, "before_side_call", None)
    if check is None:
        return None
    try:
        await check(scope_of(run), run.budgets)
    except RunRefusedError as exc:
        return exc
    return None


async def side_call_record(run: Any, model: str, usage: dict) -> None:
    """After such a call: what it used (``usage`` snake_case, of the model labelled ``model``) goes
    to the policy as a step of ``run`` would. A soft budget it spends is logged: the run has ended,
    there is no stream to tell (the dashboard shows the budget spent)."""
    if run.policy is None:
        return
    spend = StepSpend(model=model, usage=dict(usage), at=datetime.now(timezone.utc))
    for notice in await run.policy.after_step(scope_of(run), run.budgets, spend):
        logger.warning("the thread title of run %s spent a soft budget: %s", run.run_id, notice.message)


async def spend_end(run: Any) -> None:
    """The run ended: the policy lets go of what it held for it. A failure is logged (the policy's
    own expiry frees what it held)."""
    if run.policy is None or run.policy_ended:
        return
    run.policy_ended = True
    try:
        await run.policy.run_end(scope_of(run))
    except Exception:
        logger.exception("the run policy could not end run %s", run.run_id)
