"""What a log line can say about the run it was written in: the run id and the memory thread id of
the run executing in the current task (set by ``Run.execute``). The site's logging filter reads it
(``mastra_site.logging_context``); the runtime itself formats nothing."""

from __future__ import annotations

from contextvars import ContextVar, Token

#: ``(run id, thread id or None)`` of the run executing in this task, or None
RUN_LOG_CONTEXT: ContextVar[tuple[str, str | None] | None] = ContextVar("mastra_run_log_context", default=None)


def enter_run(run_id: str, thread_id: str | None) -> Token:
    """Mark the current task as running ``run_id``; pass the token to :func:`leave_run`."""
    return RUN_LOG_CONTEXT.set((run_id, thread_id))


def leave_run(token: Token) -> None:
    RUN_LOG_CONTEXT.reset(token)


def current_run() -> tuple[str, str | None] | None:
    return RUN_LOG_CONTEXT.get()


__all__ = ["RUN_LOG_CONTEXT", "current_run", "enter_run", "leave_run"]
