"""One JSON document with everything the site holds about a resource (docs/operations.md#export).

The rows are those :func:`mastra_site.resource_rows.resource_rows_find` finds (any table with a
``resource_id`` column, a key to such a row, a ``run_id`` of the resource's runs, an admin log entry
about one of them), and the resource's account with the rows it owns (those deleted with it: its API
token, its admin log). Secrets are withheld: password
hashes, token keys and webhook signing secrets (:data:`WITHHELD`) are replaced by ``"(withheld)"``.

The document::

    {"format": "mastra-resource-export", "version": 1, "resourceId": "alice",
     "exportedAt": "2031-06-01T12:00:00+00:00",
     "account": {"auth.User": [{...}], "authtoken.Token": [{...}], "admin.LogEntry": [...]},  # {}: none
     "tables": {"agents.Thread": [{"key": ..., "resource_id": "alice", ...}], ...},
     "counts": {"agents.Thread": 2, "agents.Message": 14, ..., "agents.TraceSpan": 0}}

``tables`` has one list per table holding some of the resource's rows, ``counts`` one entry per
table that could (0 included). A row is an object of its columns, by column attribute name (a
foreign key as ``thread_id``: the key of the row it points at), in the table's column order; times
are ISO 8601 strings, JSON columns are as stored.
"""

from __future__ import annotations

import json

from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone

from .resource_rows import account_rows, resource_rows_find

FORMAT = "mastra-resource-export"
VERSION = 1
#: columns never exported: secrets, not data about the person
WITHHELD = {"auth.User": {"password"}, "authtoken.Token": {"key"}, "inbox.WebhookEndpoint": {"secret"}}
WITHHELD_TEXT = "(withheld)"


def row_dict(row: models.Model) -> dict:
    """``row``'s columns as JSON-safe values (secrets withheld)."""
    withheld = WITHHELD.get(row._meta.label, set())
    data = {}
    for column in row._meta.concrete_fields:
        data[column.attname] = WITHHELD_TEXT if column.name in withheld else column.value_from_object(row)
    return json.loads(json.dumps(data, cls=DjangoJSONEncoder))


def resource_export(*, resource_id: str) -> dict:
    """The export document of ``resource_id`` (module docstring). Reads in one transaction, so that
    the tables agree with one another."""
    from django.db import transaction

    with transaction.atomic():
        found = resource_rows_find(resource_id=resource_id)
        tables, counts = {}, {}
        for entry in sorted(found.linked, key=lambda e: (e.level, e.label)):
            rows = [row_dict(row) for row in entry.rows().order_by("pk").iterator()]
            counts[entry.label] = len(rows)
            if rows:
                tables[entry.label] = rows
        account = {}
        if found.account is not None:
            account[found.account._meta.label] = [row_dict(found.account)]
            for model, key, rows in account_rows(found.account):
                # the account's own rows (deleted with it): its API token, its admin log
                if key.remote_field.on_delete is models.CASCADE and rows.exists():
                    account.setdefault(model._meta.label, []).extend(row_dict(row) for row in rows.order_by("pk"))
    return {"format": FORMAT, "version": VERSION, "resourceId": resource_id, "exportedAt": timezone.now().isoformat(),
            "account": account, "tables": tables, "counts": counts}


def resource_export_json(*, resource_id: str, indent: int | None = 2) -> str:
    """:func:`resource_export` as JSON text."""
    return json.dumps(resource_export(resource_id=resource_id), indent=indent, ensure_ascii=False,
                      cls=DjangoJSONEncoder)
