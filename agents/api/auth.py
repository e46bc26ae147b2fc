"""Authentication of API requests: DRF's token in ``Authorization: Token <key>`` or, as most HTTP
clients send it, ``Authorization: Bearer <key>`` (the same tokens, made with ``manage.py
drf_create_token <user>`` or in the admin)."""

from __future__ import annotations

from rest_framework.authentication import TokenAuthentication


class BearerTokenAuthentication(TokenAuthentication):
    keyword = "Bearer"
