"""The admin's export and erasure of a resource: each behind its named permission, erasure behind a
confirmation page; the actions of the threads' list lead there."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from agents.models import Thread
from mastra_site.models import ErasureRecord
from mastra_site.resource_erasure import resource_hash
from tests.mastra_site.planted import plant

pytestmark = pytest.mark.django_db

ALICE, BOB = "alice.w", "bob.w"
ERASE = reverse("admin:mastra_site_erasurerecord_erase")
EXPORT = reverse("admin:mastra_site_erasurerecord_export")
THREADS = reverse("admin:agents_thread_changelist")


def staff(username: str, *perms: str) -> User:
    user = User.objects.create_user(username=username, password="pw-123456", is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))
    return user


@pytest.fixture
def planted():
    operator = staff("operator")
    return plant(ALICE, "a", operator), plant(BOB, "b", operator)


def test_staff_without_the_permissions_can_neither_export_nor_erase(client, planted):
    client.force_login(staff("charlie", "agents.view_thread", "mastra_site.view_erasurerecord"))
    assert client.get(f"{ERASE}?resource={ALICE}").status_code == 403
    assert client.post(ERASE, {"resource": ALICE, "confirm": ALICE}).status_code == 403
    assert client.get(f"{EXPORT}?resource={ALICE}").status_code == 403
    page = client.get(THREADS).content.decode()
    assert "erase_resource" not in page and "export_resource" not in page
    records = client.get(reverse("admin:mastra_site_erasurerecord_changelist")).content.decode()
    assert 'id="erase-resource"' not in records and 'id="export-resource"' not in records
    assert User.objects.filter(username=ALICE).exists()


def test_the_erase_page_shows_what_goes_and_asks_for_the_id_again(client, planted):
    client.force_login(staff("dana", "mastra_site.erase_resource"))
    page = client.get(f"{ERASE}?resource={ALICE}").content.decode()
    assert "<tr><td>agents.Message</td><td>3</td></tr>" in page
    assert "<tr><td>agents.ThreadEvent</td><td>4</td></tr>" in page
    assert "Its user account <strong>alice.w</strong> will be anonymised" in page
    response = client.post(ERASE, {"resource": ALICE, "confirm": "alice"})
    assert response.status_code == 200
    assert "Type the resource id again to confirm: it did not match." in response.content.decode()
    assert Thread.objects.filter(resource_id=ALICE).count() == 2


def test_confirming_erases_and_records_who_did_it(client, planted):
    dana = staff("dana", "mastra_site.erase_resource")
    client.force_login(dana)
    response = client.post(ERASE, {"resource": ALICE, "confirm": ALICE}, follow=True)
    assert response.redirect_chain == [(reverse("admin:mastra_site_erasurerecord_changelist"), 302)]
    record = ErasureRecord.objects.get(resource_hash=resource_hash(ALICE))
    assert (record.via, record.erased_by, record.erased_by_name, record.account) == (
        "admin", dana, "dana", "anonymised")
    assert f"(erasure record {record.pk})" in response.content.decode()
    assert not Thread.objects.filter(resource_id=ALICE).exists()
    assert Thread.objects.filter(resource_id=BOB).count() == 2


def test_the_threads_actions_lead_to_the_erasure_page_and_the_export(admin_client, planted):
    alice_keys = list(Thread.objects.filter(resource_id=ALICE).values_list("pk", flat=True))
    response = admin_client.post(THREADS, {"action": "erase_resource", "_selected_action": alice_keys})
    assert (response.status_code, response["Location"]) == (302, f"{ERASE}?resource=alice.w")
    response = admin_client.post(THREADS, {"action": "export_resource", "_selected_action": alice_keys})
    assert response["Content-Disposition"] == 'attachment; filename="resource-export-alice.w.json"'
    document = json.loads(response.content)
    assert (document["resourceId"], document["counts"]["agents.Thread"]) == (ALICE, 2)
    assert Thread.objects.filter(resource_id=ALICE).count() == 2  # nothing erased by either


def test_an_action_over_two_resources_is_refused(admin_client, planted):
    keys = list(Thread.objects.values_list("pk", flat=True))
    response = admin_client.post(THREADS, {"action": "erase_resource", "_selected_action": keys}, follow=True)
    assert "Select threads of one resource (these belong to 2)." in response.content.decode()


def test_the_export_page_downloads_the_document(client, planted):
    client.force_login(staff("erin", "mastra_site.export_resource"))
    assert 'id="export-form"' in client.get(EXPORT).content.decode()
    response = client.get(f"{EXPORT}?resource={BOB}")
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content)["counts"]["agents.Message"] == 3
