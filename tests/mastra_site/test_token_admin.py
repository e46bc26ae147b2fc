"""API tokens in the admin: a token's key is shown once, when it is created, and never again, to
anyone (the pages show its first four characters)."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from rest_framework.authtoken.models import Token

pytestmark = pytest.mark.django_db

TOKENS = "/admin/mastra_site/apitoken/"


@pytest.fixture
def alice_token() -> Token:
    return Token.objects.create(user=get_user_model().objects.create_user("alice", password="pw"))


@pytest.fixture
def viewer_client(client):
    """A staff user who may only view tokens (and users)."""
    user = get_user_model().objects.create_user("vera", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=["view_apitoken", "view_user"]))
    client.login(username="vera", password="pw")
    return client


def token_pages(token: Token) -> list[str]:
    user_id = token.user_id
    return [TOKENS, f"{TOKENS}?q=alice", f"{TOKENS}{user_id}/change/", f"{TOKENS}{user_id}/history/", "/admin/"]


def test_a_view_only_user_never_sees_a_key(viewer_client, alice_token):
    for url in token_pages(alice_token):
        page = viewer_client.get(url)
        assert page.status_code == 200, url
        assert alice_token.key not in page.content.decode(), url
    listing = viewer_client.get(TOKENS).content.decode()
    assert f"{alice_token.key[:4]}…" in listing and "alice" in listing


def test_a_superuser_never_sees_a_stored_key_either(admin_client, alice_token):
    for url in [*token_pages(alice_token), f"{TOKENS}{alice_token.user_id}/delete/"]:
        page = admin_client.get(url)
        assert page.status_code == 200 and alice_token.key not in page.content.decode(), url


def test_drf_s_own_token_admin_is_gone(admin_client):
    assert admin_client.get("/admin/authtoken/tokenproxy/").status_code == 404


def test_a_new_token_s_key_is_shown_once(admin_client):
    bob = get_user_model().objects.create_user("bob", password="pw")
    response = admin_client.post(f"{TOKENS}add/", {"user": bob.pk}, follow=True)
    key = Token.objects.get(user=bob).key
    page = response.content.decode()
    assert response.status_code == 200 and key in page
    assert re.search(rf"{key}.*not be shown again", page)
    for url in token_pages(Token.objects.get(user=bob)):
        assert key not in admin_client.get(url).content.decode(), url
