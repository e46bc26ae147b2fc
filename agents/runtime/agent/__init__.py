"""The agent, split by job.

``core``: the :class:`Agent` class (constructor, dynamic configuration, the public methods, each a
thin delegation) · ``config``: checks of its configuration · ``building``: building and executing
one run · ``title``: thread title generation · ``approvals``: continuing a suspended run ·
``thread_api``: subscribe, send, abort and the queue of a thread.
"""

from .config import AGENT_OPTIONS
from .core import Agent

__all__ = ["AGENT_OPTIONS", "Agent"]
