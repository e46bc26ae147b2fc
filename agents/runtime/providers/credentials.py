"""Which agents cannot answer for want of a provider key: a key read from the environment is
checked before the first call, so that an operator learns at start-up (a warning per agent, the
dashboard) rather than from a user's failed message."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ..errors import MastraError, MissingCredentialsError
from .base import is_model_object
from .router import resolve_model


@dataclass(frozen=True)
class MissingKey:
    """An agent whose model needs a key that is not set: ``variables`` are the names to set."""

    agent_id: str
    provider: str
    variables: tuple[str, ...]

    def message(self) -> str:
        return (f"agent {self.agent_id!r} cannot answer: provider {self.provider!r} needs an API key "
                f"(set {' or '.join(self.variables)})")


def missing_key(agent: Any) -> MissingKey | None:
    """The key ``agent``'s model lacks, or None (a model chosen per request is not checked)."""
    model = getattr(agent, "model", None)
    if isinstance(model, (str, dict)):
        try:
            model = resolve_model(model)
        except MastraError:
            return None
    elif not is_model_object(model):
        return None
    resolve = getattr(model, "resolve_api_key", None)
    if not callable(resolve):
        return None
    try:
        resolve()
    except MissingCredentialsError as exc:
        return MissingKey(agent.id, exc.provider, tuple(exc.variables))
    return None


def missing_keys(agents: Iterable[Any]) -> list[MissingKey]:
    """:func:`missing_key` of each agent, those that lack one, in order."""
    return [found for found in (missing_key(agent) for agent in agents) if found is not None]


__all__ = ["MissingKey", "missing_key", "missing_keys"]
