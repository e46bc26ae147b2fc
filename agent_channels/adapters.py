"""The agent and the adapter of a channel, found in the site's registry (no database)."""

from __future__ import annotations

from agents.registry import get_mastra
from agents.runtime.errors import MastraError

from .exceptions import ChannelNotFound

PLATFORMS = ("slack", "github")


def channel_adapter(agent_id: str, platform: str):
    """``(agent, adapter)`` of the agent's ``channels`` for ``platform``; :class:`ChannelNotFound`
    when the agent does not exist or has no such adapter (the same answer for both)."""
    if platform not in PLATFORMS:
        raise ChannelNotFound(f"no channel {platform!r} (expected slack or github)")
    try:
        agent = get_mastra().get_agent(agent_id)
    except MastraError:
        raise ChannelNotFound(f"agent {agent_id!r} has no {platform} channel") from None
    adapter = agent.channels.adapter(platform) if agent.channels is not None else None
    if adapter is None:
        raise ChannelNotFound(f"agent {agent_id!r} has no {platform} channel")
    return agent, adapter


def channels_configured() -> bool:
    """Whether any agent of the site has channels (the background work runs only then)."""
    return any(agent.channels is not None for agent in get_mastra().get_agents().values())


__all__ = ["PLATFORMS", "channel_adapter", "channels_configured"]
