"""Webhook endpoints are edited in the admin; deliveries are read-only there."""

import pytest
from django.contrib.auth import get_user_model

from inbox.models import WebhookDelivery, WebhookEndpoint

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    get_user_model().objects.create_superuser("root", password="pw")
    client.login(username="root", password="pw")
    return client


def test_an_endpoint_is_created_in_the_admin(admin_client):
    response = admin_client.post("/admin/inbox/webhookendpoint/add/", {
        "name": "ops", "source": "github", "secret": "s3cret", "agent_id": "ops-assistant", "resource_id": "alice",
        "thread_template": "github:{repository}", "priority_rules": '{"ci-status": "urgent"}', "mention_name": "",
        "enabled": "on"})
    assert response.status_code == 302
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.source, endpoint.priority_rules) == ("github", {"ci-status": "urgent"})


def test_bad_rules_and_templates_are_refused(admin_client):
    response = admin_client.post("/admin/inbox/webhookendpoint/add/", {
        "name": "ops", "source": "github", "secret": "s", "agent_id": "a", "resource_id": "r",
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
