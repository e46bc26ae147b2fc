"""Notification signals (plain asyncio, no Django): a notification becomes a durable *record* in an
inbox (one per memory thread) through a :class:`NotificationStore`, and the agent's delivery policy
decides what happens to it, as Mastra decides it.

One job per module:

- :mod:`.validation`: priorities, statuses, the check of a notification payload;
- :mod:`.policy`: decisions (Mastra's built-in table and reason codes, an agent's own rules);
- :mod:`.rendering`: the ``<notification>`` and ``<notification-summary>`` signals and their metadata;
- :mod:`.store`: the store protocol and the process-wide store;
- :mod:`.delivery`: emitting signals for claimed records and settling them (used by the dispatcher);
- :mod:`.send`: ``send_notification_signal``;
- :mod:`.thread_access`: the one place the package reaches into the thread runtime.
"""

from .delivery import (IDLE_RECHECK, LOCK_TTL, MAX_DELIVERY_ATTEMPTS, DispatchPlan, NotificationResult, emit_records,
                       plan_thread_dispatch, record_json)
from .policy import (ACTIONS, NotificationDecision, default_decision, normalize_decision, resolve_decision,
                     rule_decision, validate_policy)
from .rendering import (notification_attributes, notification_metadata, notification_signal, notification_xml,
                        summarize_records, summary_signal, summary_xml)
from .send import send_notification_signal
from .store import Ingested, NotificationStore, get_notification_store, set_notification_store
from .thread_access import notification_thread_key, thread_runtime
from .validation import DEFAULT_PRIORITY, PRIORITIES, PRIORITY_RANK, STATUSES, utcnow, validate_notification

__all__ = ["ACTIONS", "DEFAULT_PRIORITY", "DispatchPlan", "IDLE_RECHECK", "LOCK_TTL", "MAX_DELIVERY_ATTEMPTS",
           "Ingested", "NotificationDecision", "NotificationResult", "NotificationStore", "PRIORITIES", "PRIORITY_RANK",
           "STATUSES", "default_decision", "emit_records", "get_notification_store", "normalize_decision",
           "notification_attributes", "notification_metadata", "notification_signal", "notification_thread_key",
           "notification_xml", "plan_thread_dispatch", "record_json", "resolve_decision", "rule_decision",
           "send_notification_signal", "set_notification_store", "summarize_records", "summary_signal",
           "summary_xml", "thread_runtime", "utcnow", "validate_notification", "validate_policy"]
