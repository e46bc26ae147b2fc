"""Scoring: scorers (``scorer``), ``is_task_complete`` (``task_completion``), scorers on results
with sampling (``live``, ``sampling``)."""

from .live import scorers_check, scorers_start, scoring_data, scoring_drain
from .sampling import sampled, sampling_check, set_sampling_random
from .scorer import JUDGE_SCHEMA, Scorer, ScorerError, create_llm_scorer, create_scorer
from .task_completion import completion_feedback, completion_scorers_run, task_complete_check, task_completion_check

__all__ = ["JUDGE_SCHEMA", "Scorer", "ScorerError", "completion_feedback", "completion_scorers_run",
           "create_llm_scorer", "create_scorer", "sampled", "sampling_check", "scorers_check", "scorers_start",
           "scoring_data", "scoring_drain", "set_sampling_random", "task_complete_check", "task_completion_check"]
