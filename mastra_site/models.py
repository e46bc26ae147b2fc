"""Models of the site itself: the erasure records, and the admin's view of DRF's API tokens."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from rest_framework.authtoken.models import TokenProxy


def key_hint(key: str) -> str:
    """The first four characters of a token's key and an ellipsis: enough to tell tokens apart,
    never the key."""
    return f"{key[:4]}…" if key else "not set"


class ApiToken(TokenProxy):
    """DRF's token (``TokenProxy``: identified in the admin by its user's id) whose name never
    holds its key. DRF's own ``Token.__str__`` is the key, which the admin writes into titles,
    breadcrumbs, messages and the action log."""

    class Meta:
        proxy = True
        verbose_name = "API token"
        verbose_name_plural = "API tokens"

    def __str__(self) -> str:
        return f"{key_hint(self.key)} ({self.user})"


class ErasureRecord(models.Model):
    """Who erased a resource's data, when, and how many rows of each table (``mastra_site.resource_erasure``).

    The record holds no personal data: the resource id only as ``resource_hash``, an HMAC-SHA256 of
    it under ``MASTRA_ERASURE_SALT`` (``SECRET_KEY`` by default), which answers "was this id erased?"
    for whoever knows the id, and nobody else. ``rows`` is ``{"<app.Model>": {"deleted": n,
    "anonymised": n}}``; ``account`` what became of the resource's user account."""

    class Via(models.TextChoices):
        COMMAND = "command"
        ADMIN = "admin"

    class Account(models.TextChoices):
        NONE = "none"  # no user has the resource id as username
        ANONYMISED = "anonymised"
        KEPT = "kept"

    resource_hash = models.CharField(max_length=64, db_index=True)
    erased_at = models.DateTimeField()
    erased_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True,
                                  related_name="+")
    #: the operator's username when erasing (kept if the user is deleted); empty from the command
    erased_by_name = models.CharField(max_length=150, blank=True, default="")
    via = models.CharField(max_length=16, choices=Via.choices)
    account = models.CharField(max_length=16, choices=Account.choices)
    rows = models.JSONField(default=dict)

    class Meta:
        ordering = ["-erased_at"]
        permissions = [("erase_resource", "Can erase all data of a resource"),
                       ("export_resource", "Can export all data of a resource")]

    def __str__(self) -> str:
        return f"erasure {self.resource_hash[:12]}… at {self.erased_at:%Y-%m-%d %H:%M}"
