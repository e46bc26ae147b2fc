"""Every row the site holds about a resource, found by walking the models (docs/operations.md).

A resource is the owner of threads (a user's username, or any id an API caller or a webhook names).
Nothing here knows the site's tables: :func:`resource_rows_find` walks ``apps.get_models()``, so a
table added later is covered when it follows the rules. A row belongs to the resource when

1. its model has a column named ``resource_id`` holding the resource id (threads, messages, runs,
   scores, notification records, webhook endpoints, ...);
2. it has a foreign key (or one-to-one) to a row that belongs to it (a thread's events, inputs and
   lease; an endpoint's deliveries; any future table with a key to a thread or a run), at any depth;
3. its model has a ``run_id`` column naming one of the resource's runs (the runs of rule 1 and 2,
   and the run ids of the rows of rule 1 and 2 that have one: tool approvals, trace spans);
4. it points at one of these rows by a generic relation (``content_type`` + ``object_id``: Django's
   admin log).

The resource's account, when one has it as its username (``agents.access.resource_for_user``), is
found as well; the rows pointing at the account (its API token, the versions it authored, its admin
log) are its own, not the resource's data: :mod:`mastra_site.resource_export` exports the account and
its token, :mod:`mastra_site.resource_erasure` anonymises it.

Querysets are lazy subqueries: nothing is read until they are evaluated, and a query stays correct
for a resource with millions of rows (no id list in Python).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.apps import apps
from django.contrib.auth import get_user_model
from django.contrib.contenttypes.fields import GenericForeignKey
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import Q
from django.db.models.functions import Cast

#: the column that names a resource (rule 1) and the one that names a run (rule 3)
RESOURCE_FIELD = "resource_id"
RUN_FIELD = "run_id"


@dataclass
class LinkedModel:
    """A model some of whose rows belong to the resource: ``query`` selects them, reading the rows
    of the models in ``depends_on``; ``level`` is one more than the highest level of those (0: only
    a ``resource_id`` column), so rows of a higher level are deleted first, while the rows their
    query reads still exist; ``why`` names the rules (for the docs and the tests)."""

    model: type[models.Model]
    query: Q
    why: list[str] = field(default_factory=list)
    depends_on: set = field(default_factory=set)
    level: int = 0

    @property
    def label(self) -> str:
        return self.model._meta.label

    def rows(self) -> models.QuerySet:
        return self.model._default_manager.filter(self.query)


@dataclass(frozen=True)
class ResourceRows:
    """The resource's rows per model, in the order to delete them (highest level first), and its
    account (None when no user has the resource id as username)."""

    resource_id: str
    linked: tuple[LinkedModel, ...]
    account: models.Model | None

    def by_label(self) -> dict[str, LinkedModel]:
        return {linked.label: linked for linked in self.linked}


def walked_models() -> list[type[models.Model]]:
    """The models whose tables hold rows (proxies and unmanaged models share or lack a table)."""
    return [m for m in apps.get_models() if not m._meta.proxy and m._meta.managed]


def _has_column(model: type[models.Model], name: str) -> bool:
    try:
        found = model._meta.get_field(name)
    except Exception:  # FieldDoesNotExist
        return False
    return found.concrete and not found.is_relation and isinstance(found, (models.CharField, models.TextField))


def _foreign_keys(model: type[models.Model]):
    return [f for f in model._meta.concrete_fields if f.is_relation and (f.many_to_one or f.one_to_one)]


def resource_rows_find(*, resource_id: str) -> ResourceRows:
    """Walk every model for the rows of ``resource_id`` (rules in the module docstring)."""
    models_ = walked_models()
    user_model = get_user_model()
    linked: dict[type[models.Model], LinkedModel] = {}

    def add(model, query: Q, why: str, depends_on=()) -> bool:
        entry = linked.get(model)
        if entry is None:
            linked[model] = LinkedModel(model, query, [why], set(depends_on))
            return True
        if why in entry.why:
            return False
        entry.query |= query
        entry.why.append(why)
        entry.depends_on.update(depends_on)
        return True

    # rule 1
    for model in models_:
        if _has_column(model, RESOURCE_FIELD):
            add(model, Q(**{RESOURCE_FIELD: resource_id}), RESOURCE_FIELD)
    # rule 2, to a fixed point (self references and the account's rows are not followed)
    for _ in range(len(models_)):
        grew = False
        for model in models_:
            if model is user_model:
                continue
            for fk in _foreign_keys(model):
                target = fk.related_model
                if target is model or target not in linked:
                    continue
                parent = linked[target]
                grew |= add(model, Q(**{f"{fk.name}__in": parent.rows().values("pk")}),
                            f"{fk.name} → {parent.label}", [target])
        if not grew:
            break
    # rule 3: the resource's run ids come from the rows found so far
    sources = [entry for entry in linked.values() if _has_column(entry.model, RUN_FIELD)]
    run_model = apps.get_model("agents", "Run")
    runs = [linked[run_model]] if run_model in linked else []
    if sources or runs:
        run_ids = Q()
        for entry in runs:
            run_ids |= Q(**{f"{RUN_FIELD}__in": entry.rows().values("pk")})
        for entry in sources:
            run_ids |= Q(**{f"{RUN_FIELD}__in": entry.rows().exclude(**{RUN_FIELD: ""}).values(RUN_FIELD)})
        feeding = [entry.model for entry in sources + runs]
        for model in models_:
            if _has_column(model, RUN_FIELD) and model not in linked:
                add(model, run_ids, RUN_FIELD, feeding)
    # rule 4: generic relations to the rows found
    for model in models_:
        for ct_field, fk_field in generic_relations(model):
            targets = [entry for entry in linked.values() if entry.model is not model]
            if not targets:
                continue
            pointing = Q(pk__in=[])
            for entry in targets:
                content_type = ContentType.objects.get_for_model(entry.model, for_concrete_model=True)
                pks = entry.rows().annotate(pk_text=Cast("pk", models.TextField())).values("pk_text")
                pointing |= Q(**{ct_field: content_type, f"{fk_field}__in": pks})
            add(model, pointing, f"{ct_field}/{fk_field} → resource rows", [entry.model for entry in targets])
    _levels(linked)
    account = user_model._default_manager.filter(**{user_model.USERNAME_FIELD: resource_id}).first()
    ordered = tuple(sorted(linked.values(), key=lambda entry: -entry.level))
    return ResourceRows(resource_id, ordered, account)


def generic_relations(model: type[models.Model]) -> list[tuple[str, str]]:
    """``(content type field, object id field)`` of each generic relation of ``model``: its
    ``GenericForeignKey`` fields, and the plain pair Django's admin log uses (a key to
    ``ContentType`` named ``content_type`` beside an ``object_id`` column)."""
    found = [(f.ct_field, f.fk_field) for f in model._meta.private_fields if isinstance(f, GenericForeignKey)]
    names = {f.name: f for f in model._meta.concrete_fields}
    content_type = names.get("content_type")
    if (content_type is not None and content_type.is_relation and content_type.related_model is ContentType
            and "object_id" in names and ("content_type", "object_id") not in found):
        found.append(("content_type", "object_id"))
    return found


def _levels(linked: dict) -> None:
    """Each entry's level: one more than the highest of the entries its query reads (a cycle
    between two models, which no table here has, stops at ``len(linked)``)."""
    for _ in range(len(linked) + 1):
        changed = False
        for entry in linked.values():
            level = 1 + max((linked[m].level for m in entry.depends_on if m in linked and m is not entry.model),
                            default=-1)
            if level != entry.level:
                entry.level, changed = level, True
        if not changed:
            return


def account_rows(account: models.Model) -> list[tuple[type[models.Model], models.ForeignKey, models.QuerySet]]:
    """The rows pointing at ``account`` by a foreign key: ``(model, key, rows)`` per key."""
    found = []
    for model in walked_models():
        for fk in _foreign_keys(model):
            if fk.related_model is type(account) and model is not type(account):
                rows = model._default_manager.filter(**{fk.name: account})
                found.append((model, fk, rows))
    return found
