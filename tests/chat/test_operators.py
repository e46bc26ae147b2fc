"""The first-account door (``/setup/``): open only on a fresh database, to a loopback peer with no
forwarding header, that names a loopback host, on an install whose ``ALLOWED_HOSTS`` are all
loopback names; two concurrent submissions make one superuser at most."""

from __future__ import annotations

import threading

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import UserManager
from django.db import connection, connections
from django.test import Client

from chat.operators import operator_setup_open

pytestmark = pytest.mark.django_db

User = get_user_model()
SETUP = {"username": "root", "password1": "a-long-secret-9", "password2": "a-long-secret-9"}
LOCAL = {"REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "localhost:8000"}


def offered(client, **meta) -> bool:
    return b'id="setup-link"' in client.get("/login/", **meta).content


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:8000", "[::1]:8000", "LOCALHOST"])
def test_open_to_a_loopback_peer_naming_a_loopback_host(client, host):
    meta = {"REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": host}
    assert operator_setup_open(meta)
    assert offered(client, **meta)
    assert client.get("/setup/", **meta).status_code == 200


@pytest.mark.parametrize("host", ["mastra.example", "mastra.example:443", "testserver", "127.0.0.1.nip.io",
                                  "localhost.evil.example", "localhost:8000:1", ""])
def test_closed_to_a_loopback_peer_naming_another_host(host):
    """A proxy that adds no forwarding header (a TCP balancer, nginx passing ``Host``) makes every
    visitor a loopback peer: the public name in ``Host`` gives it away."""
    assert not operator_setup_open({"REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": host})
    assert not operator_setup_open({"REMOTE_ADDR": "127.0.0.1"})  # no Host header at all


def test_closed_to_another_host_through_the_views(client):
    meta = {"REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": "testserver"}  # allowed, but no browser's loopback name
    assert not offered(client, **meta)
    assert client.get("/setup/", **meta).status_code == 403
    assert client.post("/setup/", SETUP, **meta).status_code == 403
    assert User.objects.count() == 0


@pytest.mark.parametrize("allowed", [["*"], ["mastra.example"], ["localhost", "mastra.example"], [".localhost"],
                                     ["localhost", "*"]])
def test_closed_while_allowed_hosts_names_anything_but_loopback(client, settings, allowed):
    """Production (``ALLOWED_HOSTS`` naming the site) creates operators with ``manage.py createsuperuser``."""
    settings.ALLOWED_HOSTS = allowed + ["localhost"]
    assert not operator_setup_open(LOCAL)
    assert not offered(client, **LOCAL)
    assert client.get("/setup/", **LOCAL).status_code == 403
    assert client.post("/setup/", SETUP, **LOCAL).status_code == 403
    assert User.objects.count() == 0


@pytest.mark.parametrize(("allowed", "host"), [(["localhost"], "localhost:8000"),
                                               (["localhost", "127.0.0.1", "[::1]", "testserver"], "127.0.0.1:8000"),
                                               (["LOCALHOST", "[::1]"], "[::1]:8000")])
def test_open_while_every_allowed_host_is_loopback(client, settings, allowed, host):
    settings.ALLOWED_HOSTS = allowed
    meta = {**LOCAL, "HTTP_HOST": host}
    assert operator_setup_open(meta)
    response = client.post("/setup/", SETUP, **meta)
    assert response.status_code == 302 and response["Location"] == "/"
    assert User.objects.get().is_superuser


def test_the_closed_page_names_createsuperuser(client, settings):
    settings.ALLOWED_HOSTS = ["mastra.example"]
    response = client.get("/setup/", REMOTE_ADDR="127.0.0.1", HTTP_HOST="mastra.example")
    assert response.status_code == 403
    assert b"manage.py createsuperuser" in response.content


# -- two submissions at once ---------------------------------------------------------------------
def advisory_lock_waiters() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
        return cursor.fetchone()[0]


def test_two_concurrent_submissions_make_one_superuser(postgres_db, monkeypatch):
    """Both requests find no user before either creates one. The first to reach ``create_superuser``
    waits there until the other has reached it too (the race the lock must prevent) or is waiting
    for the door's lock (the lock prevents it): then it goes on."""
    arrived = threading.Condition()
    count = {"n": 0}
    create = UserManager.create_superuser

    def create_when_both_are_in(self, *args, **kwargs):
        with arrived:
            count["n"] += 1
            arrived.notify_all()
            for _ in range(200):  # bounded: 200 × 50 ms, then the test fails on its own
                if count["n"] == 2 or advisory_lock_waiters():
                    break
                arrived.wait(0.05)
            else:
                raise AssertionError("the other submission neither arrived nor waited for the lock")
        return create(self, *args, **kwargs)

    monkeypatch.setattr(UserManager, "create_superuser", create_when_both_are_in)
    statuses = []

    def submit(name: str) -> None:
        try:
            response = Client().post("/setup/", {**SETUP, "username": name}, **LOCAL)
            statuses.append(response.status_code)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=submit, args=(name,)) for name in ("root", "admin")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(statuses) == [302, 403]
    assert User.objects.filter(is_superuser=True).count() == 1
    assert User.objects.count() == 1
