"""The ``channels`` option of an agent and its adapters (Mastra's ``channels: {adapters: {...}}``).

An adapter holds a platform's credentials and settings, as given in code (read them from the
environment): they are never stored in the database, logged or streamed. Their ``repr`` names the
platform and the API URL only. ``client()`` builds the platform's own SDK client on them
(``slack_sdk``'s ``AsyncWebClient``, ``githubkit``'s ``GitHub``), pointed at ``api_url``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar

from ..errors import AgentConfigError
from ..naming import snake_keys

SLACK_API_URL = "https://slack.com/api/"
GITHUB_API_URL = "https://api.github.com"
#: who may start a run on GitHub by default: the repository's own people (``author_association``)
TRUSTED_ASSOCIATIONS = ("OWNER", "MEMBER", "COLLABORATOR")
HANDLERS = ("on_direct_message", "on_mention", "on_subscribed_message")
#: the platform messages given to the model on the first mention in an existing thread
DEFAULT_CONTEXT_MESSAGES = 10


def approvers_check(value: Any, field_name: str) -> tuple[str, ...] | Callable | None:
    if value is None or callable(value):
        return value
    if isinstance(value, str) or not isinstance(value, (list, tuple, set, frozenset)) or not all(
            isinstance(v, str) and v for v in value):
        raise AgentConfigError(field_name, "must be a list of user ids (or logins), or a callable")
    return tuple(value)


def text_check(value: Any, field_name: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise AgentConfigError(field_name, "must be a non-empty string")
    return value


@dataclass(frozen=True, repr=False)
class SlackAdapter:
    """A Slack app: its bot token and signing secret. ``cards``: approvals as Block Kit cards (else
    text); ``approvers``: the Slack user ids that may decide an approval, or a callable
    ``(user_id, approval) -> bool`` (default: the user whose message started the run)."""

    platform: ClassVar[str] = "slack"
    bot_token: str
    signing_secret: str
    api_url: str = SLACK_API_URL
    cards: bool = True
    approvers: tuple[str, ...] | Callable | None = None
    timeout: float = 10.0

    def __repr__(self) -> str:
        return f"<SlackAdapter {self.api_url}>"

    def client(self):
        """A ``slack_sdk`` async web client on this app's bot token."""
        from slack_sdk.web.async_client import AsyncWebClient

        base = self.api_url if self.api_url.endswith("/") else self.api_url + "/"
        return AsyncWebClient(token=self.bot_token, base_url=base, timeout=int(max(1, self.timeout)))


@dataclass(frozen=True, repr=False)
class GitHubAdapter:
    """A GitHub App (``app_id`` + ``private_key``, tokens per installation) or a token user
    (``token``); ``bot_login`` is the login people mention. ``trusted``: the ``author_association``
    values that may start a run; ``approvers``: logins that may ``/approve``, or a callable
    ``(login, approval) -> bool`` (default: users with write access to the repository)."""

    platform: ClassVar[str] = "github"
    webhook_secret: str
    token: str | None = None
    app_id: int | str | None = None
    private_key: str | None = None
    bot_login: str | None = None
    api_url: str = GITHUB_API_URL
    approvers: tuple[str, ...] | Callable | None = None
    trusted: tuple[str, ...] = field(default=TRUSTED_ASSOCIATIONS)
    timeout: float = 10.0

    def __repr__(self) -> str:
        return f"<GitHubAdapter {self.bot_login or ''} {self.api_url}>"

    def client(self, installation_id: int | None = None):
        """A ``githubkit`` client: the installation's (a GitHub App) or the token's. Its own retries
        are off: the outbox decides when to try again (``Retry-After``, backoff)."""
        from githubkit import AppAuthStrategy, GitHub, TokenAuthStrategy

        options = {"base_url": self.api_url, "auto_retry": False, "timeout": self.timeout, "http_cache": False}
        if self.app_id is not None:
            app = GitHub(AppAuthStrategy(str(self.app_id), self.private_key), **options)
            if installation_id is None:
                return app
            return app.with_auth(app.auth.as_installation(int(installation_id)))
        return GitHub(TokenAuthStrategy(self.token), **options)


def create_slack_adapter(*, bot_token: str, signing_secret: str, api_url: str = SLACK_API_URL, cards: bool = True,
                         approvers: Any = None, timeout: float = 10.0) -> SlackAdapter:
    """Mastra's ``createSlackAdapter({botToken, signingSecret})`` in snake_case."""
    text_check(bot_token, "channels.adapters.slack.bot_token")
    text_check(signing_secret, "channels.adapters.slack.signing_secret")
    text_check(api_url, "channels.adapters.slack.api_url")
    if not isinstance(cards, bool):
        raise AgentConfigError("channels.adapters.slack.cards", "must be a bool")
    return SlackAdapter(bot_token=bot_token, signing_secret=signing_secret, api_url=api_url, cards=cards,
                        approvers=approvers_check(approvers, "channels.adapters.slack.approvers"),
                        timeout=float(timeout))


def create_github_adapter(*, webhook_secret: str, token: str | None = None, app_id: int | str | None = None,
                          private_key: str | None = None, bot_login: str | None = None,
                          api_url: str = GITHUB_API_URL, approvers: Any = None,
                          trusted: Any = TRUSTED_ASSOCIATIONS, timeout: float = 10.0) -> GitHubAdapter:
    """A GitHub adapter: ``token``, or ``app_id`` with ``private_key`` (one of the two)."""
    where = "channels.adapters.github"
    text_check(webhook_secret, f"{where}.webhook_secret")
    text_check(api_url, f"{where}.api_url")
    if (token is None) == (app_id is None):
        raise AgentConfigError(where, "takes token=..., or app_id=... with private_key=... (one of the two)")
    if token is not None:
        text_check(token, f"{where}.token")
    if app_id is not None:
        if not isinstance(app_id, (int, str)) or isinstance(app_id, bool) or not str(app_id).strip():
            raise AgentConfigError(f"{where}.app_id", "must be the app's id")
        text_check(private_key, f"{where}.private_key")
    text_check(bot_login, f"{where}.bot_login", required=False)
    if isinstance(trusted, str) or not isinstance(trusted, (list, tuple, set, frozenset)) or not all(
            isinstance(t, str) for t in trusted):
        raise AgentConfigError(f"{where}.trusted", "must be a list of author_association values")
    return GitHubAdapter(webhook_secret=webhook_secret, token=token, app_id=app_id, private_key=private_key,
                         bot_login=bot_login, api_url=api_url,
                         approvers=approvers_check(approvers, f"{where}.approvers"),
                         trusted=tuple(t.upper() for t in trusted), timeout=float(timeout))


ADAPTER_TYPES = {"slack": SlackAdapter, "github": GitHubAdapter}


@dataclass(frozen=True)
class ChannelsConfig:
    """An agent's checked ``channels`` option. ``handlers[name]`` is None (the default behaviour),
    False (disabled) or a function ``handler(message, default)`` that may call ``await
    default(message)``."""

    adapters: dict[str, Any]
    context_messages: int = DEFAULT_CONTEXT_MESSAGES
    handlers: dict[str, Any] = field(default_factory=dict)

    def adapter(self, platform: str):
        return self.adapters.get(platform)

    def handler(self, name: str):
        return self.handlers.get(name)


def channels_check(value: Any, *, has_memory: bool) -> ChannelsConfig | None:
    """``channels={"adapters": {...}, "thread_context": {"max_messages": n}, "handlers": {...}}``
    checked (``AgentConfigError`` naming the field); None when not given. Channels need memory."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise AgentConfigError("channels", "must be {'adapters': {...}, 'thread_context': {...}, 'handlers': {...}}")
    value = snake_keys(value)
    unknown = set(value) - {"adapters", "thread_context", "handlers"}
    if unknown:
        raise AgentConfigError(f"channels.{sorted(unknown)[0]}", "unknown key")
    if not has_memory:
        raise AgentConfigError("channels", "needs memory=Memory() on the agent (one platform thread = one memory thread)")
    adapters = value.get("adapters")
    if not isinstance(adapters, dict) or not adapters:
        raise AgentConfigError("channels.adapters", "must be a dict of {platform: adapter}")
    for platform, adapter in adapters.items():
        kind = ADAPTER_TYPES.get(platform)
        if kind is None:
            raise AgentConfigError(f"channels.adapters.{platform}", "unknown platform (expected 'slack' or 'github')")
        if not isinstance(adapter, kind):
            maker = f"create_{platform}_adapter"
            raise AgentConfigError(f"channels.adapters.{platform}", f"must be made with {maker}()")
    context = value.get("thread_context") or {}
    if not isinstance(context, dict) or set(snake_keys(context)) - {"max_messages"}:
        raise AgentConfigError("channels.thread_context", "must be {'max_messages': n}")
    limit = snake_keys(context).get("max_messages", DEFAULT_CONTEXT_MESSAGES)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 0 <= limit <= 1000:
        raise AgentConfigError("channels.thread_context.max_messages", "must be an integer from 0 to 1000")
    handlers = value.get("handlers") or {}
    if not isinstance(handlers, dict):
        raise AgentConfigError("channels.handlers", "must be a dict")
    handlers = snake_keys(handlers)
    for name, handler in handlers.items():
        if name not in HANDLERS:
            raise AgentConfigError(f"channels.handlers.{name}", f"unknown handler (expected one of {', '.join(HANDLERS)})")
        if handler is not None and handler is not False and not callable(handler):
            raise AgentConfigError(f"channels.handlers.{name}", "must be False or a function")
    return ChannelsConfig(adapters=dict(adapters), context_messages=limit, handlers=dict(handlers))


__all__ = ["ADAPTER_TYPES", "ChannelsConfig", "GitHubAdapter", "HANDLERS", "SlackAdapter", "TRUSTED_ASSOCIATIONS",
           "channels_check", "create_github_adapter", "create_slack_adapter"]
