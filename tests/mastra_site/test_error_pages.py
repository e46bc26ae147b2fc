"""Error pages in the site's look (top-level ``templates/``): a page that does not exist, and a bug,
with the site's style sheet and favicon and nothing of Django's debug page."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def production(settings):
    settings.DEBUG = False
    settings.ROOT_URLCONF = "tests.mastra_site.error_urls"


def test_a_missing_page_is_the_sites_404(production):
    response = Client().get("/no/such/page/")
    page = response.content.decode()
    assert response.status_code == 404
    assert "<title>Not found · Mastra</title>" in page and "<h1>Not found</h1>" in page
    assert 'rel="stylesheet"' in page and "chat/chat." in page and 'rel="icon"' in page


def test_a_bug_is_the_sites_500_without_details(production):
    response = Client(raise_request_exception=False).get("/broken/")
    page = response.content.decode()
    assert response.status_code == 500
    assert "<h1>Server error</h1>" in page
    assert "a bug" not in page and "Traceback" not in page
