"""The first operator account: created from the login page of a fresh install, so that
``make run`` → browser → chatting needs no terminal step.

Allowed only while no user exists and only to a request from this machine (a loopback peer address
and no proxy forwarding headers: behind a reverse proxy on the same host every visitor would look
local). Both checks run on the server for the form and for its submission.
"""

from __future__ import annotations

import ipaddress

from django.contrib.auth import get_user_model
from django.db import transaction

#: headers a reverse proxy adds; their presence means the peer address is not the visitor's
FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP", "HTTP_X_FORWARDED_HOST")


class OperatorSetupClosed(Exception):
    """The first operator account cannot be created here (a user exists, or the request is not local)."""

    code = "setup_closed"


def request_is_local(meta: dict) -> bool:
    """Whether the request's peer is this machine and nothing forwarded it."""
    if any(meta.get(name) for name in FORWARDING_HEADERS):
        return False
    try:
        return ipaddress.ip_address(meta.get("REMOTE_ADDR") or "").is_loopback
    except ValueError:
        return False


def operator_setup_open(meta: dict) -> bool:
    """Whether this request may create the first operator account."""
    return request_is_local(meta) and not get_user_model().objects.exists()


def operator_create_first(*, meta: dict, username: str, password: str):
    """Create the first user, a superuser, when :func:`operator_setup_open`; raises
    :class:`OperatorSetupClosed` otherwise. The caller validated ``username`` and ``password``."""
    User = get_user_model()
    with transaction.atomic():
        if not operator_setup_open(meta):
            raise OperatorSetupClosed("the first operator account exists already or this request is not local")
        return User.objects.create_superuser(username=username, password=password)
