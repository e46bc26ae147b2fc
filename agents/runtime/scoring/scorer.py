"""Scorers: ``create_scorer`` for code scorers and ``create_llm_scorer`` for a judge agent.

A scorer runs up to four steps, each a callable (sync or async) of one dict ``ctx``:
``preprocess(ctx)``, ``analyze(ctx)``, ``generate_score(ctx) -> number`` (required) and
``generate_reason(ctx) -> str``. ``ctx["run"]`` is what is scored (``input``, ``output``, ``run_id``,
``request_context``, ``ground_truth``); ``ctx["results"]`` holds the earlier steps' results
(``preprocess_step_result``, ``analyze_step_result``) and ``ctx["score"]`` the score, for the reason.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable

from ..errors import AgentConfigError, MastraError


class ScorerError(MastraError):
    """A scorer's step raised or returned something that is not a score."""

    code = "scorer_error"


async def _call(func: Callable, ctx: dict) -> Any:
    value = func(ctx)
    return await value if inspect.isawaitable(value) else value


class Scorer:
    """A scorer (build it with :func:`create_scorer` or :func:`create_llm_scorer`)."""

    def __init__(self, *, id: str, name: str | None = None, description: str = "", preprocess: Callable | None = None,
                 analyze: Callable | None = None, generate_score: Callable | None = None,
                 generate_reason: Callable | None = None):
        if not isinstance(id, str) or not id.strip():
            raise AgentConfigError("scorer.id", "must be a non-empty string")
        if not callable(generate_score):
            raise AgentConfigError(f"scorer {id!r}.generate_score", "is required (a callable returning a number)")
        for field, func in (("preprocess", preprocess), ("analyze", analyze), ("generate_reason", generate_reason)):
            if func is not None and not callable(func):
                raise AgentConfigError(f"scorer {id!r}.{field}", "must be callable")
        self.id = id
        self.name = name or id
        self.description = description
        self.steps = {"preprocess": preprocess, "analyze": analyze, "generate_score": generate_score,
                      "generate_reason": generate_reason}

    async def run(self, run: dict) -> dict:
        """Score ``run``: ``{"score", "reason", "preprocess_step_result", "analyze_step_result"}``.
        Raises :class:`ScorerError` naming the step that failed."""
        results: dict = {}
        ctx = {"run": run, "results": results}
        for step in ("preprocess", "analyze"):
            if self.steps[step] is not None:
                results[f"{step}_step_result"] = await self._step(step, ctx)
        score = await self._step("generate_score", ctx)
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            raise ScorerError(f"scorer {self.id!r}: generate_score returned {score!r}, not a number")
        reason = None
        if self.steps["generate_reason"] is not None:
            reason = await self._step("generate_reason", {**ctx, "score": score})
        return {"score": score, "reason": reason, **results}

    async def _step(self, step: str, ctx: dict) -> Any:
        try:
            return await _call(self.steps[step], ctx)
        except ScorerError:
            raise
        except Exception as exc:
            raise ScorerError(f"scorer {self.id!r} failed in {step}: {type(exc).__name__}: {exc}") from exc

    def __repr__(self) -> str:
        return f"<Scorer {self.id}>"


def create_scorer(*, id: str, name: str | None = None, description: str = "", preprocess: Callable | None = None,
                  analyze: Callable | None = None, generate_score: Callable, generate_reason: Callable | None = None) -> Scorer:
    """A code scorer: ``generate_score(ctx)`` returns the score; the other steps are optional."""
    return Scorer(id=id, name=name, description=description, preprocess=preprocess, analyze=analyze,
                  generate_score=generate_score, generate_reason=generate_reason)


JUDGE_SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}, "reason": {"type": "string"}},
                "required": ["score", "reason"]}


def default_judge_prompt(run: dict) -> str:
    return ("Score the answer.\nInput:\n" + json.dumps(run.get("input"), default=str)
            + "\nAnswer:\n" + json.dumps(run.get("output"), default=str))


def create_llm_scorer(*, id: str, judge: Any, instructions: str | None = None, prompt: Callable[[dict], str] | None = None,
                      name: str | None = None, description: str = "") -> Scorer:
    """A scorer whose score and reason come from ``judge`` (an :class:`~agents.runtime.Agent`): it is
    asked ``prompt(run)`` (plus ``instructions``, if given, as its instructions for the call) with the
    structured output ``{"score": number, "reason": string}``."""
    if not hasattr(judge, "generate"):
        raise AgentConfigError(f"scorer {id!r}.judge", "must be an Agent")
    build = prompt or default_judge_prompt

    async def analyze(ctx: dict) -> dict:
        options: dict = {"structured_output": {"schema": JUDGE_SCHEMA}}
        if instructions:
            options["instructions"] = instructions
        result = await judge.generate(build(ctx["run"]), **options)
        if result.error is not None or not isinstance(result.object, dict):
            raise ScorerError(f"judge {judge.id!r} gave no verdict: {result.error or result.text!r}")
        return result.object

    return Scorer(id=id, name=name, description=description, analyze=analyze,
                  generate_score=lambda ctx: ctx["results"]["analyze_step_result"]["score"],
                  generate_reason=lambda ctx: ctx["results"]["analyze_step_result"]["reason"])


__all__ = ["JUDGE_SCHEMA", "Scorer", "ScorerError", "create_llm_scorer", "create_scorer", "default_judge_prompt"]
