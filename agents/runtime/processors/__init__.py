"""Processors: hooks that read, rewrite or stop what goes into and out of a run.

``protocol``: the four optional hooks, :class:`ProcessorPipeline`, how hooks are called · the
built-ins: ``keyword_blocker`` (:class:`KeywordBlocker`), ``pii`` (:class:`PIIRedactor`),
``token_limiter`` (:class:`TokenLimiter`), ``unicode_normalizer`` (:class:`UnicodeNormalizer`).
A run applies them through ``agents.runtime.run.processing``.
"""

from .keyword_blocker import KeywordBlocker
from .pii import PIIRedactor
from .protocol import (HOOKS, Processor, ProcessorPipeline, hook_call, processor_id, processors_check,
                       processors_flatten)
from .token_limiter import TokenLimiter, estimate_tokens
from .unicode_normalizer import UnicodeNormalizer

__all__ = ["HOOKS", "KeywordBlocker", "PIIRedactor", "Processor", "ProcessorPipeline", "TokenLimiter",
           "UnicodeNormalizer", "estimate_tokens", "hook_call", "processor_id", "processors_check", "processors_flatten"]
