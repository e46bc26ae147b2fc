"""Webhook endpoints are edited in the admin; deliveries are read-only there. A secret is
write-only: no page renders it, a superuser can set a new one."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from inbox.models import WebhookDelivery, WebhookEndpoint
from tests.inbox.webhooks.conftest import github_signature

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    get_user_model().objects.create_superuser("root", password="pw")
    client.login(username="root", password="pw")
    return client


def test_an_endpoint_is_created_in_the_admin(admin_client):
    response = admin_client.post("/admin/inbox/webhookendpoint/add/", {
        "name": "ops", "source": "github", "new_secret": "s3cret", "agent_id": "ops-assistant", "resource_id": "alice",
        "thread_template": "github:{repository}", "priority_rules": '{"ci-status": "urgent"}', "mention_name": "",
        "enabled": "on"})
    assert response.status_code == 302
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.source, endpoint.priority_rules, endpoint.secret) == ("github", {"ci-status": "urgent"}, "s3cret")


def test_bad_rules_and_templates_are_refused(admin_client):
    response = admin_client.post("/admin/inbox/webhookendpoint/add/", {
        "name": "ops", "source": "github", "new_secret": "s", "agent_id": "a", "resource_id": "r",
        "thread_template": "github:{nope}", "priority_rules": '{"ci-status": "loud"}', "enabled": "on"})
    assert response.status_code == 200
    assert b"a JSON object of kind" in response.content
    assert WebhookEndpoint.objects.count() == 0


def test_deliveries_are_read_only(admin_client):
    endpoint = WebhookEndpoint.objects.create(name="ops", source="github", secret="s", agent_id="a", resource_id="r")
    delivery = WebhookDelivery.objects.create(endpoint=endpoint, delivery_id="d1", event="ping")
    assert admin_client.get("/admin/inbox/webhookdelivery/").status_code == 200
    assert admin_client.get("/admin/inbox/webhookdelivery/add/").status_code == 403
    view = admin_client.get(f"/admin/inbox/webhookdelivery/{delivery.pk}/change/")
    assert view.status_code == 200 and b"d1" in view.content


SECRET = "whsec-do-not-show-4711"
FORM = {"name": "ops", "source": "github", "agent_id": "echo", "resource_id": "alice",
        "thread_template": "github:{repository}", "priority_rules": "{}", "mention_name": "", "enabled": "on"}


@pytest.fixture
def endpoint():
    return WebhookEndpoint.objects.create(name="ops", source="github", secret=SECRET, agent_id="echo",
                                          resource_id="alice")


@pytest.fixture
def viewer_client(client):
    """A staff user who may only view endpoints and deliveries."""
    user = get_user_model().objects.create_user("vera", password="pw", is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(
        content_type__app_label="inbox", codename__in=["view_webhookendpoint", "view_webhookdelivery"]))
    client.login(username="vera", password="pw")
    return client


def endpoint_pages(endpoint) -> list[str]:
    return ["/admin/inbox/webhookendpoint/", f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/",
            f"/admin/inbox/webhookendpoint/{endpoint.pk}/history/", "/admin/inbox/webhookendpoint/?q=ops"]


def test_a_view_only_user_never_sees_the_secret(viewer_client, endpoint):
    for url in endpoint_pages(endpoint):
        page = viewer_client.get(url)
        assert page.status_code == 200, url
        assert SECRET not in page.content.decode(), url
    change = viewer_client.get(f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert "set" in change and 'name="new_secret"' not in change
    assert viewer_client.post(f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/",
                              {**FORM, "new_secret": "mine"}).status_code == 403
    endpoint.refresh_from_db()
    assert endpoint.secret == SECRET


def test_a_superuser_does_not_see_the_secret_either(admin_client, endpoint):
    for url in endpoint_pages(endpoint):
        page = admin_client.get(url)
        assert page.status_code == 200 and SECRET not in page.content.decode(), url
    change = admin_client.get(f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert 'name="new_secret"' in change and 'name="secret"' not in change


def test_the_list_says_whether_a_secret_is_set(admin_client, endpoint):
    WebhookEndpoint.objects.create(name="bare", source="github", secret="", agent_id="echo", resource_id="alice")
    listing = admin_client.get("/admin/inbox/webhookendpoint/").content.decode()
    assert '<td class="field-secret_status">set</td>' in listing
    assert '<td class="field-secret_status">not set</td>' in listing


def test_saving_without_a_new_secret_keeps_the_old_one(admin_client, endpoint):
    response = admin_client.post(f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/", {**FORM, "new_secret": ""})
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.secret == SECRET


def test_a_new_endpoint_needs_a_secret(admin_client):
    response = admin_client.post("/admin/inbox/webhookendpoint/add/", {**FORM, "new_secret": ""})
    assert response.status_code == 200 and b"This field is required." in response.content
    assert WebhookEndpoint.objects.count() == 0


def test_a_superuser_sets_a_new_secret_that_signs_deliveries(admin_client, endpoint, client):
    response = admin_client.post(f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/",
                                 {**FORM, "new_secret": "  n3w-secret  "})
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.secret == "n3w-secret"
    body = b'{"zen": "Keep it logically awesome."}'

    def ping(secret: str):
        return client.post("/api/webhooks/github/ops", body, content_type="application/json",
                           headers={"X-GitHub-Event": "ping", "X-GitHub-Delivery": "d-ping",
                                    "X-Hub-Signature-256": github_signature(body, secret)})

    assert ping(SECRET).status_code == 401
    assert ping("n3w-secret").status_code == 200
