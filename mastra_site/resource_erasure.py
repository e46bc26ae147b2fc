"""Erase everything the site holds about a resource (docs/operations.md#erasure).

:func:`resource_erase` deletes, in one transaction, every row :func:`mastra_site.resource_rows.resource_rows_find`
finds (threads, messages, inputs, events, leases, runs, trace spans, scores, notification records,
webhook endpoints and their deliveries, admin log entries about them, and any later table that has a
``resource_id``, a key to one of those rows or a ``run_id`` of the resource's runs), except the rows
of :data:`ANONYMISERS`, which are kept without their personal content: a tool approval's decision
(tool, status, when) stays in the audit trail, its arguments and run state go; the cost ledger's
rows and daily sums keep their tokens and costs without the resource, thread and run.

The resource's user account (the user whose username is the resource id) is anonymised unless
``keep_account``: username ``erased-<16 hex>``, no name, no e-mail, no usable password, inactive, no
staff or superuser flag, no group or permission; its API token and sessions are deleted; the rows
pointing at it (agent versions it authored, its admin log, erasures it made) keep pointing at it,
and any text column of theirs that held the old username holds the new one.

An :class:`~mastra_site.models.ErasureRecord` says who erased, when, how many rows of each table,
and keeps the resource id only as an HMAC under ``MASTRA_ERASURE_SALT``.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from datetime import datetime

from django.apps import apps
from django.conf import settings
from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction
from django.utils import timezone

from agents.models import ThreadLease, ToolApproval
from ledger.erasure import entries_anonymise, resource_daily_anonymise
from .exceptions import ErasureRefused
from .models import ErasureRecord
from .resource_rows import account_rows, generic_relations, resource_rows_find, walked_models


def resource_hash(resource_id: str) -> str:
    """The HMAC-SHA256 (hex) of ``resource_id`` under ``MASTRA_ERASURE_SALT``."""
    return hmac.new(settings.MASTRA_ERASURE_SALT.encode(), resource_id.encode(), hashlib.sha256).hexdigest()


def erasure_records_for(*, resource_id: str) -> models.QuerySet:
    """The erasures of ``resource_id`` (newest first)."""
    return ErasureRecord.objects.filter(resource_hash=resource_hash(resource_id))


def approvals_anonymise(rows: models.QuerySet) -> tuple[int, int]:
    """Decided approvals keep their decision without their arguments and the run's state; pending
    ones (whose run is erased with the resource) go. Returns (deleted, anonymised)."""
    anonymised = rows.exclude(status=ToolApproval.Status.PENDING).update(args={}, args_hash="", state={})
    deleted, _ = rows.filter(status=ToolApproval.Status.PENDING).delete()
    return deleted, anonymised


#: tables whose rows are kept without their personal content: ``label → (rows) -> (deleted, anonymised)``
ANONYMISERS: dict[str, Callable[[models.QuerySet], tuple[int, int]]] = {
    "agents.ToolApproval": approvals_anonymise,
    # the cost ledger keeps what was spent, without whom for (ledger.erasure)
    "ledger.LedgerEntry": entries_anonymise, "ledger.LedgerResourceDaily": resource_daily_anonymise}
#: rows of an account that are credentials: deleted with its anonymisation
CREDENTIALS = ("authtoken.Token",)


def resource_erasure_plan(*, resource_id: str) -> dict:
    """What erasing ``resource_id`` would touch: ``{"tables": [(label, rows)], "account": username|None}``."""
    found = resource_rows_find(resource_id=resource_id)
    tables = [(entry.label, entry.rows().count()) for entry in sorted(found.linked, key=lambda e: e.label)]
    return {"tables": [(label, n) for label, n in tables if n], "total": sum(n for _, n in tables),
            "account": found.account.get_username() if found.account is not None else None}


def resource_erase(*, resource_id: str, erased_by=None, via: str = ErasureRecord.Via.COMMAND,
                   keep_account: bool = False, now: datetime | None = None) -> ErasureRecord:
    """Erase ``resource_id``'s rows (module docstring) and record it; returns the record.

    Refuses (:class:`ErasureRefused`, nothing changed) an empty resource id (``invalid_resource``),
    and a resource one of whose threads has a run going on (``resource_busy``: abort it first; a
    run suspended on a tool approval is erased with its thread). The resource's thread leases are
    locked first, so that no run starts on its threads meanwhile."""
    if not resource_id:
        raise ErasureRefused("name the resource to erase", code="invalid_resource")
    now = now or timezone.now()
    with transaction.atomic():
        leases = ThreadLease.objects.select_for_update().filter(thread__resource_id=resource_id)
        if any(lease.owner_run_id and lease.status == ThreadLease.Status.RUNNING
               and lease.expires_at is not None and lease.expires_at > now for lease in leases):
            raise ErasureRefused("a run of this resource is going on: abort it, then erase",
                                 code="resource_busy")
        found = resource_rows_find(resource_id=resource_id)
        rows: dict[str, dict[str, int]] = {}

        def count(label: str, key: str, n: int) -> None:
            if n:
                rows.setdefault(label, {}).setdefault(key, 0)
                rows[label][key] += n

        for entry in found.linked:  # highest level first: a query reads only rows not yet deleted
            anonymise = ANONYMISERS.get(entry.label)
            if anonymise is not None:
                deleted, anonymised = anonymise(entry.rows())
                count(entry.label, "deleted", deleted)
                count(entry.label, "anonymised", anonymised)
                continue
            _, per_label = entry.rows().delete()
            for label, n in per_label.items():
                count(label, "deleted", n)
        if found.account is None:
            account = ErasureRecord.Account.NONE
        elif keep_account:
            account = ErasureRecord.Account.KEPT
        else:
            account_anonymise(found.account, resource_hash(resource_id), count)
            account = ErasureRecord.Account.ANONYMISED
        return ErasureRecord.objects.create(
            resource_hash=resource_hash(resource_id), erased_at=now, erased_by=erased_by,
            erased_by_name=erased_by.get_username() if erased_by is not None else "", via=via, account=account,
            rows=rows)


def account_anonymise(user, digest: str, count: Callable[[str, str, int], None]) -> None:
    """Anonymise ``user`` (module docstring), in the caller's transaction."""
    old = user.get_username()
    new = f"erased-{digest[:16]}"
    for label in CREDENTIALS:
        if _model_exists(label):
            model = apps.get_model(label)
            deleted, _ = model._default_manager.filter(user=user).delete()
            count(label, "deleted", deleted)
    count("sessions.Session", "deleted", _sessions_delete(user))
    setattr(user, user.USERNAME_FIELD, new)
    user.first_name = user.last_name = user.email = ""
    user.set_unusable_password()
    user.is_active = user.is_staff = user.is_superuser = False
    user.save()
    user.groups.clear()
    user.user_permissions.clear()
    count(user._meta.label, "anonymised", 1)
    # the rows pointing at the account, by key or generic relation, no longer hold the old username
    pointing = [rows for _model, _key, rows in account_rows(user)]
    content_type = ContentType.objects.get_for_model(user, for_concrete_model=True)
    for model in walked_models():
        for ct_field, fk_field in generic_relations(model):
            pointing.append(model._default_manager.filter(**{ct_field: content_type, fk_field: str(user.pk)}))
    for rows in pointing:
        for column in rows.model._meta.concrete_fields:
            if isinstance(column, (models.CharField, models.TextField)) and not column.primary_key:
                if column.max_length is not None and column.max_length < len(old):
                    continue  # cannot hold the old username
                rows.filter(**{column.name: old}).update(**{column.name: new[:column.max_length]})


def _model_exists(label: str) -> bool:
    try:
        apps.get_model(label)
    except LookupError:
        return False
    return True


def _sessions_delete(user) -> int:
    """Delete ``user``'s sessions in the database session store; returns how many."""
    if not apps.is_installed("django.contrib.sessions"):
        return 0
    from django.contrib.sessions.models import Session

    mine = [s.pk for s in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
            if s.get_decoded().get("_auth_user_id") == str(user.pk)]
    deleted, _ = Session.objects.filter(pk__in=mine).delete()
    return deleted
