"""Scorers on an agent's results (``Agent(scorers=...)``, the ``scorers`` call option).

``scorers`` is ``{key: scorer}`` or ``{key: {"scorer": scorer or its key/id, "sampling": {...}}}``; a
call's ``scorers`` replace the agent's, and a name refers to one of the agent's scorers. After a run
ends well, each sampled scorer scores ``{"input": {"input_messages", "remembered_messages",
"system_messages"}, "output": <response messages>}`` in the background (the result is returned at
once, as in Mastra); each score is saved through the run store's ``save_score`` (a failure is saved
with its ``error``). :func:`scoring_drain` waits for the scores still running (tests, shutdown).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from ..errors import AgentConfigError
from ..messages import new_id, now_iso
from .sampling import sampled, sampling_check
from .scorer import Scorer

logger = logging.getLogger(__name__)

_running: set[asyncio.Task] = set()


def scorers_check(value: Any, field: str, known: dict | None = None) -> dict:
    """``{key: {"scorer": Scorer, "sampling": {...}}}`` from the accepted forms; a name is looked up
    in ``known`` (the agent's scorers). Raises :class:`AgentConfigError` naming the entry."""
    if not isinstance(value, dict):
        raise AgentConfigError(field, "must be a dict of {name: scorer or {'scorer': ..., 'sampling': ...}}")
    out = {}
    for key, entry in value.items():
        if isinstance(entry, Scorer):
            entry = {"scorer": entry}
        if not isinstance(entry, dict) or set(entry) - {"scorer", "sampling"}:
            raise AgentConfigError(f"{field}.{key}", "must be a scorer or {'scorer': ..., 'sampling': ...}")
        scorer = entry.get("scorer")
        if isinstance(scorer, str):
            found = [e["scorer"] for k, e in (known or {}).items() if scorer in (k, e["scorer"].id)]
            if not found:
                raise AgentConfigError(f"{field}.{key}.scorer", f"unknown scorer {scorer!r}")
            scorer = found[0]
        if not isinstance(scorer, Scorer):
            raise AgentConfigError(f"{field}.{key}.scorer", "must be a scorer (create_scorer) or a scorer's name")
        out[key] = {"scorer": scorer, "sampling": sampling_check(entry.get("sampling"), f"{field}.{key}.sampling")}
    return out


def scoring_data(run: Any) -> dict:
    """What the scorers score (``result.scoring_data`` with ``return_scorer_data``)."""
    return {"input": {"input_messages": run.input_messages, "remembered_messages": run.remembered,
                      "system_messages": run.system},
            "output": run.response_messages}


async def _score(run_info: dict, key: str, scorer: Scorer, data: dict, store: Any) -> None:
    record = {"id": new_id(), "scorer_key": key, "scorer_id": scorer.id, "scorer_name": scorer.name, **run_info,
              "input": data["input"], "output": data["output"], "created_at": None}
    try:
        scored = await scorer.run({**data, "run_id": run_info["run_id"],
                                   "request_context": run_info.get("request_context") or {}})
        record.update(score=scored["score"], reason=scored.get("reason"), error=None,
                      preprocess_result=scored.get("preprocess_step_result"),
                      analyze_result=scored.get("analyze_step_result"))
    except Exception as exc:
        record.update(score=None, reason=None, error=str(exc), preprocess_result=None, analyze_result=None)
    record["created_at"] = now_iso()
    record.pop("request_context", None)
    save = getattr(store, "save_score", None)
    if save is None:
        return
    try:
        await save(record)
    except Exception:
        logger.exception("could not save the score of %s for run %s", scorer.id, run_info["run_id"])


def scorers_start(run: Any) -> int:
    """Start the sampled scorers of a run that ended well; returns how many started."""
    if not run.scorers or run.finish_reason in ("error", "abort", "suspended") or run.tripwire is not None:
        return 0
    data = scoring_data(run)
    run_info = {"run_id": run.run_id, "agent_id": getattr(run.agent, "id", None),
                "thread_id": (run.memory or {}).get("thread_id"), "resource_id": (run.memory or {}).get("resource_id"),
                "request_context": run.request_context}
    started = 0
    for key, entry in run.scorers.items():
        if not sampled(entry["sampling"]):
            continue
        task = asyncio.ensure_future(_score(run_info, key, entry["scorer"], data, run.run_store))
        _running.add(task)
        task.add_done_callback(_running.discard)
        started += 1
    return started


async def scoring_drain(timeout: float = 10.0) -> bool:
    """Wait until no score is running; False when some still ran after ``timeout`` seconds."""
    if not _running:
        return True
    done, pending = await asyncio.wait(set(_running), timeout=timeout)
    return not pending


__all__ = ["scorers_check", "scorers_start", "scoring_data", "scoring_drain"]
