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
    """root (a superuser) signed in; alice and bob are the site's other users (owners to choose)."""
    get_user_model().objects.create_superuser("root", password="pw")
    get_user_model().objects.create_user("alice", password="pw")
    get_user_model().objects.create_user("bob", password="pw")
    client.login(username="root", password="pw")
    return client


NEW = {"name": "ops", "source": "github", "new_secret": "s3cret", "agent_id": "echo", "resource_id": "alice",
       "thread_template": "github:{repository}", "mention_name": "", "enabled": "on"}


def form_errors(response) -> dict:
    return {name: list(errors) for name, errors in response.context["adminform"].form.errors.items()}


def test_an_endpoint_is_created_in_the_admin(admin_client):
    response = admin_client.post("/admin/inbox/webhookendpoint/add/", {**NEW, "priority_ci_status": "urgent",
                                                                       "priority_mention": "low"})
    assert response.status_code == 302
    endpoint = WebhookEndpoint.objects.get()
    assert (endpoint.source, endpoint.agent_id, endpoint.resource_id, endpoint.priority_rules, endpoint.secret) == (
        "github", "echo", "alice", {"ci-status": "urgent", "mention": "low"}, "s3cret")


def test_the_agent_and_the_owner_are_chosen_from_lists(admin_client):
    page = admin_client.get("/admin/inbox/webhookendpoint/add/").content.decode()
    agents = page[page.index('<select name="agent_id"'):]
    agents = agents[:agents.index("</select>")]
    assert agents.count("<option") == 3  # the blank, echo, slow: plain has no memory
    assert '<option value="echo">Echo (echo)</option>' in agents
    assert '<option value="slow">Slow (slow)</option>' in agents and "plain" not in agents
    owners = page[page.index('<select name="resource_id"'):]
    owners = owners[:owners.index("</select>")]
    assert [line.split('"')[1] for line in owners.split("<option")[1:]] == ["", "alice", "bob", "root"]


@pytest.mark.parametrize("field,value,message", [
    ("agent_id", "nope", "Select a valid choice. nope is not one of the available choices."),
    ("agent_id", "plain", "Select a valid choice. plain is not one of the available choices."),
    ("resource_id", "mallory", "Select a valid choice. mallory is not one of the available choices."),
    ("thread_template", "github:{nope}",
     "Unknown placeholder {nope}: use {source}, {repository}, {branch}, {number}, {channel}, {user}."),
    ("thread_template", "github:{repository.owner}",
     "Unknown placeholder {repository.owner}: use {source}, {repository}, {branch}, {number}, {channel}, {user}."),
    ("thread_template", "github:{repository",
     "Not a valid template (expected '}' before end of string); use {source}, {repository}, {branch}, {number}, "
     "{channel}, {user}, and {{ }} for a literal brace."),
    ("priority_ci_status", "loud", "Select a valid choice. loud is not one of the available choices."),
    ("priority_direct_message", "high", "GitHub sends no direct-message notifications: leave it on the default."),
])
def test_a_bad_value_is_a_form_error_and_nothing_is_stored(admin_client, field, value, message):
    response = admin_client.post("/admin/inbox/webhookendpoint/add/", {**NEW, field: value})
    assert response.status_code == 200
    assert form_errors(response) == {field: [message]}
    assert WebhookEndpoint.objects.count() == 0


def test_an_endpoint_saved_before_the_checks_shows_its_bad_agent_and_owner_until_fixed(admin_client):
    endpoint = WebhookEndpoint.objects.create(name="old", source="slack", secret="s", agent_id="plain",
                                              resource_id="carol", priority_rules={"mention": "urgent"})
    url = f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/"
    page = admin_client.get(url).content.decode()
    assert '<option value="plain" selected>plain (not an agent with memory on this site)</option>' in page
    assert '<option value="carol" selected>carol (no such active user)</option>' in page
    assert '<option value="urgent" selected>urgent</option>' in page
    form = {**NEW, "name": "old", "source": "slack", "new_secret": "", "agent_id": "plain", "resource_id": "carol",
            "priority_mention": "urgent"}
    response = admin_client.post(url, form)
    assert form_errors(response) == {
        "agent_id": ["Agent 'plain' has no memory: it cannot take notifications (they go to a thread)."],
        "resource_id": ["Unknown owner 'carol': choose an active user (the threads and notifications are theirs)."]}
    assert admin_client.post(url, {**form, "agent_id": "echo", "resource_id": "bob"}).status_code == 302
    endpoint.refresh_from_db()
    assert (endpoint.agent_id, endpoint.resource_id, endpoint.priority_rules, endpoint.secret) == (
        "echo", "bob", {"mention": "urgent"}, "s")


def test_the_page_shows_the_full_url_to_paste_into_the_sender(admin_client, settings):
    endpoint = WebhookEndpoint.objects.create(name="ops", source="github", secret="s", agent_id="echo",
                                              resource_id="alice")
    url = f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/"
    assert '<code id="webhook-url" data-base="http://testserver/api/webhooks">' \
           'http://testserver/api/webhooks/github/ops</code>' in admin_client.get(url).content.decode()
    listing = admin_client.get("/admin/inbox/webhookendpoint/").content.decode()
    assert '<td class="field-webhook_path">/api/webhooks/github/ops</td>' in listing
    # behind a TLS proxy, at the host the site is reached by
    settings.ALLOWED_HOSTS = ["hooks.example.com"]
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    page = admin_client.get(url, headers={"Host": "hooks.example.com", "X-Forwarded-Proto": "https"})
    assert ">https://hooks.example.com/api/webhooks/github/ops</code>" in page.content.decode()


def test_the_priority_rules_say_what_each_kind_defaults_to(admin_client):
    page = admin_client.get("/admin/inbox/webhookendpoint/add/").content.decode()
    assert '<option value="" selected>default (GitHub: high)</option>' in page  # ci-status
    assert '<option value="" selected>default (GitHub: medium, Slack: high)</option>' in page  # mention
    assert "Sent by GitHub and Slack." in page


def test_deliveries_are_read_only(admin_client):
    endpoint = WebhookEndpoint.objects.create(name="ops", source="github", secret="s", agent_id="a", resource_id="r")
    delivery = WebhookDelivery.objects.create(endpoint=endpoint, delivery_id="d1", event="ping")
    assert admin_client.get("/admin/inbox/webhookdelivery/").status_code == 200
    assert admin_client.get("/admin/inbox/webhookdelivery/add/").status_code == 403
    view = admin_client.get(f"/admin/inbox/webhookdelivery/{delivery.pk}/change/")
    assert view.status_code == 200 and b"d1" in view.content


SECRET = "whsec-do-not-show-4711"
FORM = {"name": "ops", "source": "github", "agent_id": "echo", "resource_id": "alice",
        "thread_template": "github:{repository}", "mention_name": "", "enabled": "on"}


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
