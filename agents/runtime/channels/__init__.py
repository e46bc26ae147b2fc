"""Channels: an agent converses on a platform (Slack threads, GitHub issues and pull requests).

The runtime side holds the adapters' configuration (``create_slack_adapter``,
``create_github_adapter``), the check of an agent's ``channels`` option and the pure rules of the
conversation (thread keys, sender prefixes, message splitting, pacing). Receiving webhooks, the
durable outbox and the relay of a run's chunks to the platform live in the Django app
``agent_channels`` (docs/channels.md)."""

from .adapters import (ChannelsConfig, GitHubAdapter, SlackAdapter, channels_check, create_github_adapter,
                       create_slack_adapter)
from .message import ChannelMessage

__all__ = ["ChannelMessage", "ChannelsConfig", "GitHubAdapter", "SlackAdapter", "channels_check", "create_github_adapter",
           "create_slack_adapter"]
