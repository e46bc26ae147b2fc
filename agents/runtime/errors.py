"""Errors raised by the agent runtime.

Every error carries a stable ``code`` (a short snake_case string) that the HTTP API and the
websocket consumer map to responses; the message is for humans and may change.
"""

from __future__ import annotations

from .redaction import redact_text


class MastraError(Exception):
    """Base class of every error the runtime raises on purpose."""

    code = "mastra_error"

    def __init__(self, message: str, *, code: str | None = None, details: dict | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.details = details or {}

    def to_dict(self) -> dict:
        data = {"code": self.code, "message": self.message}
        if self.details:
            data["details"] = self.details
        return data


class AgentConfigError(MastraError):
    """An agent, a tool or a call was configured wrongly (names the field and the problem)."""

    code = "agent_config_error"

    def __init__(self, field: str, problem: str, *, code: str | None = None):
        super().__init__(f"{field}: {problem}", code=code, details={"field": field})
        self.field = field
        self.problem = problem


class ModelError(MastraError):
    """A model provider failed (HTTP error, malformed stream, missing credentials). Its message is
    redacted (``agents.runtime.redaction.redact_text``): it reaches run records and event logs."""

    code = "model_error"

    def __init__(self, message: str, *, code: str | None = None, status: int | None = None,
                 retryable: bool = False, retry_after: float | None = None, details: dict | None = None):
        # provider text may quote a key, a token or a base URL with its password
        super().__init__(redact_text(message), code=code, details=details)
        self.status = status
        #: whether the same model may answer if asked again (429, 5xx, a dropped connection)
        self.retryable = retryable
        #: seconds the provider asked to wait before asking again (``Retry-After``), when it said
        self.retry_after = retry_after


class MissingCredentialsError(ModelError):
    code = "missing_credentials"

    def __init__(self, provider: str, variables: list[str]):
        names = " or ".join(variables)
        super().__init__(f"provider {provider!r} needs an API key: set {names}")
        self.provider = provider
        self.variables = variables


class ModelUnavailableError(ModelError):
    """Every model of a run's model (a fallback chain, or the one model) failed or was skipped for
    one model step, after its retries. ``code`` is ``model_unavailable`` (at least one was tried)
    or ``model_circuit_open`` (every one was skipped by its open circuit breaker); ``details``
    lists each attempt (``{"model", "code", "status", "message"}``), the message ends with the last
    provider's reason (redacted)."""

    code = "model_unavailable"


class ToolApprovalError(MastraError):
    """An approval or decline did not match a pending tool call."""

    code = "tool_approval_error"


class SignalError(MastraError):
    """A signal, message or thread target was invalid; nothing was stored."""

    code = "signal_error"


class ThreadNotFoundError(MastraError):
    """A memory thread API call named a thread that does not exist (for that resource)."""

    code = "thread_not_found"


class AbortError(MastraError):
    code = "aborted"


class StructuredOutputError(MastraError):
    code = "structured_output_error"


class RequestContextError(MastraError):
    code = "request_context_invalid"


class NotificationError(MastraError):
    """A notification, a delivery policy or an inbox action was invalid; nothing was stored."""

    code = "notification_error"


class ProcessorError(MastraError):
    """A processor's hook raised (not its ``abort``): the run ends with this error, naming the
    processor and the hook."""

    code = "processor_error"


class RunRefusedError(MastraError):
    """A run policy refused a model call (``agents.runtime.run_policy``): the run ends with this
    error before the call; HTTP answers 429 with its code."""

    code = "run_refused"


class BudgetExceededError(RunRefusedError):
    """A hard budget of the run's scope is spent. ``details``: ``budget`` (its id), ``scope``,
    ``period``, ``unit``, ``limit`` and ``spent`` (strings), ``resetsAt`` (ISO, None for a per-run
    budget)."""

    code = "budget_exceeded"


class TooManyActiveRunsError(RunRefusedError):
    """The resource (or agent) already has its limit of active runs. ``details``: ``scope``
    (``resource`` or ``agent``), ``limit``, ``active``."""

    code = "too_many_active_runs"
