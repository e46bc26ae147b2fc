"""The first operator account: created from the login page of a fresh install, so that
``make run`` → browser → chatting needs no terminal step.

The door is open only while no user exists, and only to a request that this machine sent to a
laptop install. All of these must hold:

- every name of ``settings.ALLOWED_HOSTS`` is a loopback one (``localhost``, ``127.0.0.1``,
  ``[::1]``, ``testserver``): a site configured for a public name (or ``*``) never offers it;
  production operators use ``manage.py createsuperuser``;
- the request's ``Host`` header names a loopback host (``localhost``, ``127.0.0.1``, ``[::1]``, any
  port): behind a proxy that keeps the visitor's ``Host`` (a TCP balancer, nginx with
  ``proxy_set_header Host $host``) every visitor's peer address is the proxy's loopback one, but
  their ``Host`` is the public name;
- the peer address is a loopback address and no proxy forwarding header is present.

The checks run on the server for the form and again, under a lock, for its submission
(:func:`operator_create_first`).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.http.request import split_domain_port

#: headers a reverse proxy adds; their presence means the peer address is not the visitor's
FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP", "HTTP_X_FORWARDED_HOST")
#: ``Host`` names a browser on this machine uses for this machine
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})
#: ``ALLOWED_HOSTS`` entries of a laptop install (``testserver`` is Django's test client)
LOOPBACK_ALLOWED_HOSTS = LOOPBACK_HOSTS | {"testserver"}
#: the PostgreSQL advisory lock key of the first account's creation (any constant: "mastra first operator")
ADVISORY_LOCK_KEY = 0x6D617374_72613031


class OperatorSetupClosed(Exception):
    """The first operator account cannot be created here (a user exists, or the request is not local)."""

    code = "setup_closed"


def site_is_loopback_only() -> bool:
    """Whether ``settings.ALLOWED_HOSTS`` names nothing but loopback hosts (``*`` is not one)."""
    hosts = [host.strip().lower() for host in settings.ALLOWED_HOSTS]
    return bool(hosts) and all(host in LOOPBACK_ALLOWED_HOSTS for host in hosts)


def host_is_loopback(meta: dict) -> bool:
    """Whether the raw ``Host`` header (port ignored) is ``localhost``, ``127.0.0.1`` or ``[::1]``.
    Read raw: ``request.get_host()`` would also accept ``X-Forwarded-Host`` (with
    ``USE_X_FORWARDED_HOST``) and ``SERVER_NAME`` when there is no ``Host``."""
    domain, _port = split_domain_port(meta.get("HTTP_HOST") or "")
    return domain in LOOPBACK_HOSTS


def request_is_local(meta: dict) -> bool:
    """Whether the request's peer is this machine, nothing forwarded it and it names this machine."""
    if any(meta.get(name) for name in FORWARDING_HEADERS):
        return False
    if not host_is_loopback(meta):
        return False
    try:
        return ipaddress.ip_address(meta.get("REMOTE_ADDR") or "").is_loopback
    except ValueError:
        return False


def operator_setup_open(meta: dict) -> bool:
    """Whether this request may create the first operator account."""
    return site_is_loopback_only() and request_is_local(meta) and not get_user_model().objects.exists()


def lock_first_account() -> None:
    """Serialise the first account's creations until the current transaction ends, so that the
    check "no user exists" and the creation are one step: of two concurrent submissions, the second
    waits, then finds the first's user and is refused.

    - PostgreSQL: ``pg_advisory_xact_lock`` on a constant key. Under READ COMMITTED each statement
      sees what was committed before it started, and the lock is released only at commit, so the
      check that follows the lock sees the first submission's user. Nothing else waits on this key
      (other writes to the user table, logins, ``createsuperuser`` are not held up).
    - SQLite: one writer at a time for the whole database. The site opens its transactions with
      ``BEGIN IMMEDIATE`` (``transaction_mode``), which takes the write lock at once; the no-op
      ``UPDATE`` takes it anyway on a ``BEGIN DEFERRED`` connection, before the check reads anything
      (a deferred transaction that read first and wrote second could fail with "database is
      locked" instead of waiting).
    - Any other database: no lock is known to be right here, so the door stays closed
      (``manage.py createsuperuser``).
    """
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [ADVISORY_LOCK_KEY])
        elif connection.vendor == "sqlite":
            meta = get_user_model()._meta
            table, key = connection.ops.quote_name(meta.db_table), connection.ops.quote_name(meta.pk.column)
            cursor.execute(f"UPDATE {table} SET {key} = {key} WHERE 0 = 1")
        else:
            raise OperatorSetupClosed(f"the first operator account cannot be created on {connection.vendor}")


def operator_create_first(*, meta: dict, username: str, password: str):
    """Create the first user, a superuser, when :func:`operator_setup_open`; raises
    :class:`OperatorSetupClosed` otherwise. The caller validated ``username`` and ``password``.
    Checked again under :func:`lock_first_account`: concurrent submissions make one user at most."""
    User = get_user_model()
    with transaction.atomic():
        if not (site_is_loopback_only() and request_is_local(meta)):
            raise OperatorSetupClosed("this request is not local")
        lock_first_account()
        if User.objects.exists():
            raise OperatorSetupClosed("the first operator account exists already")
        return User.objects.create_superuser(username=username, password=password)
