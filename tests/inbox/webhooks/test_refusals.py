"""Refused and failed webhook requests are counted with their reason (per sender, endpoint, code and
minute), listed in the admin, and bounded whatever a sender posts."""

from datetime import datetime, timedelta, timezone

import pytest
from django.contrib.auth import get_user_model

from inbox.models import WebhookDelivery, WebhookEndpoint, WebhookRefusal
from inbox.webhooks.refusals import RefusalBatcher, refusal_batcher, webhook_refusal_record
from tests.inbox.webhooks.conftest import SECRET, github_signature

pytestmark = pytest.mark.django_db

BODY = b'{"zen": "Design for failure."}'


NOW = datetime(2026, 12, 1, 9, 30, 12, tzinfo=timezone.utc)


@pytest.fixture(autouse=True)
def every_refusal_written(settings, monkeypatch):
    """Each refusal written at once (the pacing has tests of its own below), all in one minute."""
    settings.MASTRA_WEBHOOK_REFUSAL_WRITE_MS = 0
    monkeypatch.setattr(refusal_batcher, "now", lambda: NOW)


@pytest.fixture
def endpoint():
    return WebhookEndpoint.objects.create(name="ops", source="github", secret=SECRET, agent_id="echo",
                                          resource_id="alice", thread_template="github:{repository}")


def post(client, name: str, body: bytes = BODY, *, event: str = "ping", delivery: str = "d-1",
         signature: str | None = None):
    return client.post(f"/api/webhooks/github/{name}", body, content_type="application/json",
                       headers={"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
                                "X-Hub-Signature-256": github_signature(body) if signature is None else signature})


def rows() -> list[tuple]:
    return list(WebhookRefusal.objects.order_by("id").values_list(
        "source", "name", "endpoint_id", "code", "status", "count", "reason", "delivery_id"))


def test_a_bad_signature_is_refused_and_counted_with_its_reason(client, endpoint):
    for n in range(3):
        response = post(client, "ops", delivery=f"d-{n}", signature="sha256=" + "0" * 64)
        assert response.status_code == 401
    assert response.json()["code"] == "invalid_signature"
    assert rows() == [("github", "ops", endpoint.pk, "invalid_signature", 401, 3,
                       "the X-Hub-Signature-256 signature does not match", "d-2")]
    assert WebhookDelivery.objects.count() == 0


def test_refused_signatures_are_logged_once_a_minute_per_endpoint(client, endpoint, caplog, monkeypatch):
    from inbox.webhooks import receive

    monkeypatch.setattr(receive, "_refusal_log", {})
    clock = [1000.0]
    monkeypatch.setattr(receive.time, "monotonic", lambda: clock[0])
    for n in range(50):
        post(client, "ops", delivery=f"d-{n}", signature="sha256=" + "0" * 64)
    clock[0] += 61
    post(client, "ops", delivery="d-late", signature="sha256=" + "0" * 64)
    lines = [r.getMessage() for r in caplog.records if r.name == "inbox.webhooks.receive"]
    assert lines == ["github webhook ops refused: the X-Hub-Signature-256 signature does not match",
                     "github webhook ops refused: the X-Hub-Signature-256 signature does not match "
                     "(49 more refused since the last line)"]
    assert rows()[0][5] == 51  # every one counted


def test_requests_to_unknown_endpoints_share_one_row_whatever_their_names(client, endpoint):
    for n in range(5):
        assert post(client, f"guess-{n}").status_code == 404
    assert rows() == [("github", "", None, "endpoint_not_found", 404, 5, "no github webhook endpoint 'guess-4'",
                       "d-1")]


def test_a_disabled_endpoint_is_refused_as_unknown(client, endpoint):
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(enabled=False)
    assert post(client, "ops").status_code == 404
    assert rows() == [("github", "", None, "endpoint_not_found", 404, 1, "no github webhook endpoint 'ops'", "d-1")]


def test_a_bad_payload_and_a_missing_header_are_counted_apart(client, endpoint):
    body = b'{"repository": "not an object", "issue": {}, "comment": {"id": 1, "body": "hi"}, "action": "created"}'
    assert post(client, "ops", body, event="issue_comment").status_code == 400
    assert post(client, "ops", delivery="").status_code == 400
    assert rows() == [
        ("github", "ops", endpoint.pk, "invalid_payload", 400, 1, "repository must be an object", "d-1"),
        ("github", "ops", endpoint.pk, "missing_delivery_id", 400, 1, "X-GitHub-Delivery is missing", ""),
    ]


def test_a_notification_that_fails_is_counted_and_its_delivery_can_come_again(client, endpoint):
    WebhookEndpoint.objects.filter(pk=endpoint.pk).update(agent_id="gone")
    body = (b'{"action": "created", "repository": {"full_name": "acme/app"}, "issue": {"number": 7},'
            b' "comment": {"id": 99, "body": "looks good", "user": {"login": "bob"}}}')
    response = post(client, "ops", body, event="issue_comment", delivery="d-fail")
    assert (response.status_code, response.json()["code"]) == (404, "agent_not_found")
    assert rows() == [("github", "ops", endpoint.pk, "agent_not_found", 404, 1,
                       "issue_comment: the notification failed: no agent with id 'gone'", "d-fail")]
    assert WebhookDelivery.objects.count() == 0  # released: GitHub's redelivery is tried again


def test_a_body_too_large_is_counted_too(client, endpoint, settings):
    settings.MASTRA_API_MAX_BODY = 100
    response = post(client, "ops", b'{"zen": "' + b"z" * 200 + b'"}', delivery="d-big")
    assert (response.status_code, response.json()["code"]) == (413, "body_too_large")
    assert rows() == [("github", "ops", endpoint.pk, "body_too_large", 413, 1, "the body is larger than 100 bytes",
                       "d-big")]


def test_an_ignored_delivery_keeps_its_reason(client, endpoint):
    response = post(client, "ops", b'{"ref": "refs/heads/main"}', event="push", delivery="d-push")
    assert response.status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert (delivery.outcome, delivery.reason) == ("ignored", "event 'push' is not handled")
    assert WebhookRefusal.objects.count() == 0


def test_each_minute_has_its_row_and_the_oldest_beyond_the_cap_are_deleted(endpoint, settings):
    settings.MASTRA_WEBHOOK_REFUSALS_MAX = 10
    start = datetime(2026, 12, 1, 9, 0, 30, tzinfo=timezone.utc)
    for minute in range(15):
        for _ in range(2):
            webhook_refusal_record(source="github", name="ops", endpoint=endpoint, code="invalid_signature",
                                   status=401, reason="bad", now=start + timedelta(minutes=minute))
    kept = list(WebhookRefusal.objects.order_by("minute").values_list("minute", "count", "first_at"))
    assert len(kept) == 10
    assert [(m.minute, c) for m, c, _ in kept] == [(m, 2) for m in range(5, 15)]
    assert kept[0][2] == start + timedelta(minutes=5)


def test_a_process_writes_a_row_at_most_once_per_interval_and_adds_the_held_requests_then():
    clock = [0.0]
    batcher = RefusalBatcher(interval_ms=1000, clock=lambda: clock[0])
    start = datetime(2026, 12, 1, 9, 0, 0, tzinfo=timezone.utc)

    def refusal(second: float, code: str = "invalid_signature", delivery: str = "") -> list:
        clock[0] = second
        fields = dict(source="github", name="ops", endpoint=None, code=code, status=401, reason="bad",
                      delivery_id=delivery, now=start + timedelta(seconds=second))
        return [(last["code"], last["delivery_id"], count) for last, count in batcher.take(fields)]

    assert refusal(0.0, delivery="d1") == [("invalid_signature", "d1", 1)]  # the first of a row: at once
    assert refusal(0.2, delivery="d2") == []
    assert refusal(0.5, delivery="d3") == []
    assert refusal(0.6, "invalid_payload", "p1") == [("invalid_payload", "p1", 1)]  # another row
    assert refusal(1.1, delivery="d4") == [("invalid_signature", "d4", 3)]  # d2, d3 and d4 in one write
    assert refusal(1.7, delivery="d5") == []
    # a refusal of the other row, due again, also carries the first row's held request when it is due
    assert refusal(2.2, "invalid_payload", "p2") == [("invalid_signature", "d5", 1), ("invalid_payload", "p2", 1)]
    assert batcher.held == {}


def test_a_flood_costs_one_write_per_second_and_loses_no_count(client, endpoint, settings, monkeypatch):
    settings.MASTRA_WEBHOOK_REFUSAL_WRITE_MS = 1000
    clock = [100.0]
    monkeypatch.setattr(refusal_batcher, "clock", lambda: clock[0])
    for n in range(5):
        assert post(client, "ops", delivery=f"d-{n}", signature="sha256=" + "2" * 64).status_code == 401
    assert WebhookRefusal.objects.get().count == 1  # the first at once, four held
    clock[0] = 101.5
    assert post(client, "ops", delivery="d-5", signature="sha256=" + "2" * 64).status_code == 401
    row = WebhookRefusal.objects.get()
    assert (row.count, row.delivery_id) == (6, "d-5")


def test_a_long_reason_and_a_control_character_are_clipped(endpoint):
    row = webhook_refusal_record(source="github", name="ops", endpoint=endpoint, code="invalid_payload", status=400,
                                 reason="x\x00" + "y" * 600, delivery_id="d\n" + "z" * 300)
    assert (len(row.reason), row.reason[:3], row.reason[-1]) == (500, "xyy", "…")
    assert (len(row.delivery_id), row.delivery_id[:2]) == (255, "dz")


@pytest.fixture
def admin_client(client):
    get_user_model().objects.create_superuser("root", password="pw")
    client.login(username="root", password="pw")
    return client


def test_the_admin_lists_refusals_on_the_endpoint_and_in_their_own_list(admin_client, client, endpoint):
    post(client, "ops", delivery="d-bad", signature="sha256=" + "1" * 64)
    post(client, "ops", delivery="d-bad2", signature="sha256=" + "1" * 64)
    post(client, "nope")
    page = admin_client.get(f"/admin/inbox/webhookendpoint/{endpoint.pk}/change/").content.decode()
    assert ('<tr class="refusal"><td>' in page and "<td>401</td><td>invalid_signature</td><td>2</td>"
            "<td>the X-Hub-Signature-256 signature does not match</td><td>d-bad2</td></tr>" in page)
    assert page.count('<tr class="refusal">') == 1  # the unknown endpoint's row is not this endpoint's
    listing = admin_client.get("/admin/inbox/webhookrefusal/").content.decode()
    assert listing.count('<td class="field-code">') == 2
    assert '<td class="field-endpoint_name">(unknown endpoint)</td>' in listing
    assert "no github webhook endpoint &#x27;nope&#x27;" in listing
    deliveries = admin_client.get("/admin/inbox/webhookdelivery/").content.decode()
    assert "(3 requests in 2 rows)" in deliveries
    assert admin_client.get("/admin/inbox/webhookrefusal/add/").status_code == 403
