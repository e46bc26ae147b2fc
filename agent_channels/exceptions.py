"""The errors of a channel webhook request; each has a stable ``code`` (agents.api.errors maps codes
to statuses)."""

from agents.runtime.errors import MastraError


class ChannelNotFound(MastraError):
    """No such agent, or the agent has no adapter for the platform (404)."""

    code = "channel_not_found"


class InvalidSignature(MastraError):
    """The request is not signed by the platform with the adapter's secret, or is stale (401)."""

    code = "invalid_signature"


__all__ = ["ChannelNotFound", "InvalidSignature"]
