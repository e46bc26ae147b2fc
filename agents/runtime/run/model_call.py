"""The model call of one step: the run's model chain tried in order, each model with its retries.

For each enabled entry of the chain, from the one that answered the run's previous step (a run
that fell back stays on its fallback, as Mastra's): an entry whose circuit breaker is open is
skipped; otherwise its model is asked, and asked again after a retryable failure (at most its
``max_retries`` times, after the wait :func:`~agents.runtime.providers.resilience.retry_delay`
says); a failure retrying cannot fix, or the last retry's, hands the step to the next entry.

The step's request is the same for every attempt: the same messages, tool calls and tool results
(tools ran in earlier steps and never run again here; nothing of a failed attempt enters the run).
What a failed attempt streamed stays with the subscribers that saw it: its open parts are ended and
a transient ``data-model-retry`` chunk names the attempt, its error, what happens next and the ids
of the parts and calls to drop (``discarded``), so that a display can remove them. The run's
``error`` chunk comes once, when no model could answer (:class:`ModelUnavailableError`).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from ..chunks import data_chunk
from ..errors import ModelError, ModelUnavailableError
from ..messages import new_id
from ..providers.base import ModelRequest
from ..providers.breaker import breaker_allows, breaker_failure, breaker_success
from ..providers.chain import ChainEntry
from ..providers.resilience import current_resilience, retry_delay
from ..redaction import redact_text
from ..results import StepResult
from .step_stream import stream_answer

logger = logging.getLogger(__name__)

#: the longest provider reason kept per attempt (results, run records, chunks)
REASON_CHARS = 500


def entry_request(request: ModelRequest, entry: ChainEntry) -> ModelRequest:
    """``request`` for ``entry``'s model: its own settings and provider options over the call's,
    and no retries inside the SDK (the chain retries, so that every wait is its own). A step's
    request (``step._request``) says no SDK retries already: for a model without settings of its
    own it goes as it is."""
    if not entry.model_settings and not entry.provider_options:
        return request if request.sdk_retries == 0 else dataclasses.replace(request, sdk_retries=0)
    settings = {**(request.settings or {}), **entry.model_settings}
    options = dict(request.provider_options or {})
    for provider, values in entry.provider_options.items():
        options[provider] = {**(options.get(provider) or {}), **(values or {})}
    return dataclasses.replace(request, settings=settings, provider_options=options, sdk_retries=0)


def attempt_record(entry: ChainEntry, exc: BaseException, delay: float | None) -> dict:
    data = {"model": entry.label, "code": getattr(exc, "code", "error"), "status": getattr(exc, "status", None),
            "message": redact_text(str(exc))[:REASON_CHARS]}
    if isinstance(exc, ModelError) and exc.retry_after is not None:
        data["retryAfterMs"] = round(exc.retry_after * 1000)
    data["delayMs"] = round(delay * 1000) if delay is not None else None
    return data


async def step_answer(run: Any, request: ModelRequest, step_number: int,
                      chain: tuple[ChainEntry, ...] | None = None) -> StepResult:
    """The answer of one model step (see the module docstring). ``chain``: the models
    ``prepare_step`` chose for this step, instead of the run's (whose position it leaves alone).
    Raises the model's own :class:`ModelError` when a run's only model failed, else
    :class:`ModelUnavailableError`."""
    message_id = new_id()
    if not run.silent:
        await run.send(run.chunk("step-start", {"messageId": message_id, "stepNumber": step_number}))
    own = chain is None
    entries = run.chain if own else chain
    start = run.chain_index if own else 0
    candidates = [(i, e) for i, e in enumerate(entries) if i >= start and e.enabled]
    attempts: list[dict] = []
    last: BaseException | None = None
    tried = 0
    settings = current_resilience()
    for position, (index, entry) in enumerate(candidates):
        others = position < len(candidates) - 1
        label = entry.label
        if not breaker_allows(label):
            attempts.append({"model": label, "code": "circuit_open", "status": None,
                             "message": f"{label} is skipped: its circuit breaker is open", "delayMs": None})
            continue
        tried += 1
        retries = entry.retries(request.settings or {})
        retry_number = 0
        while True:
            sent: list[str] = []
            try:
                step = await stream_answer(run, entry.model, entry_request(request, entry), step_number,
                                           message_id, sent)
            except ModelError as exc:
                opened = breaker_failure(label, exc)
                last = exc
                # a breaker this failure opened stops the retries: the model is out for its cool-down
                delay = None if opened else retry_delay(exc, retry_number=retry_number,
                                                        retries_left=retries - retry_number, other_models=others)
                record = attempt_record(entry, exc, delay)
                attempts.append(record)
                following = label if delay is not None else _next_label(candidates, position)
                if following is not None:  # another attempt comes: say so (the last failure is the run's error)
                    await run.send(data_chunk("data-model-retry", run.run_id, {
                        "stepNumber": step_number, "messageId": message_id, "attempt": len(attempts), **record,
                        "next": following, "discarded": sent}))
                    logger.warning("model %s failed at step %s of run %s (%s); %s", label, step_number,
                                   run.run_id, record["code"], f"retrying in {delay:.2f} s" if delay is not None
                                   else f"next: {following}")
                if delay is None:
                    break
                await settings.sleep(delay)
                retry_number += 1
                continue
            breaker_success(label)
            step.model = label
            step.attempts = attempts
            if own:
                run.chain_index = index
            return step
    raise _unavailable(entries, candidates, attempts, last, tried, step_number)


def _next_label(candidates: list[tuple[int, ChainEntry]], position: int) -> str | None:
    following = candidates[position + 1:]
    return following[0][1].label if following else None


def _unavailable(entries: tuple[ChainEntry, ...], candidates: list, attempts: list[dict], last: BaseException | None,
                 tried: int, step_number: int) -> ModelError:
    """The error of a step no model answered."""
    if last is not None and len(candidates) == 1 and entries[candidates[0][0]].single:
        return last  # a run's one model: its own error, as without a chain
    if tried == 0:
        names = ", ".join(a["model"] for a in attempts)
        return ModelUnavailableError(f"no model could answer step {step_number}: the circuit breaker of every "
                                     f"model is open ({names})", code="model_circuit_open",
                                     details={"attempts": attempts})
    reasons = "; ".join(f"{a['model']}: {a['message']}" for a in attempts if a["code"] != "circuit_open")
    return ModelUnavailableError(f"no model could answer step {step_number}: {reasons}",
                                 status=getattr(last, "status", None), details={"attempts": attempts})


__all__ = ["entry_request", "step_answer"]
