"""Former home of thread coordination, now the package ``agents.threads``.

Kept only for modules that still import from here; new code imports ``agents.threads.*``.
"""

from agents.threads.activity import lease_is_active, thread_state_get
from agents.threads.store import DjangoThreadStore

_is_active = lease_is_active  # the name ``inbox.services`` still imports

__all__ = ["DjangoThreadStore", "lease_is_active", "thread_state_get"]
