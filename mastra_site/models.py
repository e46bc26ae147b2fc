"""Models of the site itself: none of its own, only the admin's view of DRF's API tokens."""

from __future__ import annotations

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
