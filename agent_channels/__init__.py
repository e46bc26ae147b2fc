"""Channels: agents converse in Slack threads and on GitHub issues and pull requests, exactly once
(docs/channels.md). The runtime side (adapters, pure rules) is ``agents.runtime.channels``."""
