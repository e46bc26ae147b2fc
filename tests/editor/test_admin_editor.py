"""The agent editor through the real admin views: locks, permissions, forged POSTs, versions,
compare and the "try it" panel."""

import json

import pytest
from asgiref.sync import async_to_sync
from django.test import Client
from django.urls import reverse

from agents.editor.models import AgentDefinition, AgentVersion
from agents.editor.services import version_publish, version_save
from tests.editor.conftest import staff

pytestmark = pytest.mark.django_db

INPUTS = {"instructions": 'name="instructions"', "tools": 'name="tools"',
          "tool_descriptions": 'name="description__alpha"'}
EDITABLE = {"free": {"instructions", "tools", "tool_descriptions"}, "locked": set(), "instr": {"instructions"},
            "tooled": {"tools", "tool_descriptions"}, "desc": {"tool_descriptions"}}
FORGED = {"instructions": {"instructions": "Forged."}, "tools": {"tools": ["alpha"]},
          "tool_descriptions": {"description__alpha": "Forged."}}


async def collect(response) -> bytes:
    return b"".join([chunk async for chunk in response.streaming_content])


def page_url(agent_id):
    return reverse("admin:agents_agentdefinition_change", args=[AgentDefinition.objects.get(agent_id=agent_id).pk])


def client_for(user):
    client = Client()
    client.force_login(user)
    return client


def current_post(client, agent_id, **changes):
    """The page's form as a browser would send it, with ``changes``."""
    form = client.get(page_url(agent_id)).context["form"]
    data = {"based_on": form.initial.get("based_on", ""), "note": ""}
    for name, field in form.fields.items():
        if name in ("based_on", "note"):
            continue
        data[name] = field.initial
    data.update(changes)
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize("agent_id", sorted(EDITABLE))
def test_the_page_offers_exactly_the_fields_the_code_allows(editor_admin_site, admin_client, agent_id):
    page = admin_client.get(page_url(agent_id)).content.decode()
    for field, marker in INPUTS.items():
        assert (marker in page) == (field in EDITABLE[agent_id]), field
    assert f'<dd id="code-id">{agent_id}</dd>' in page
    assert '<dd id="code-model">ConfigEchoModel</dd>' in page
    assert 'name="name"' not in page and 'name="model"' not in page and 'name="id"' not in page
    assert ("Save as a new draft" in page) == bool(EDITABLE[agent_id])


@pytest.mark.parametrize("agent_id, field", [(a, f) for a in sorted(EDITABLE) for f in FORGED
                                             if f not in EDITABLE[a]])
def test_a_forged_post_of_a_locked_field_is_refused_and_stores_nothing(editor_admin_site, admin_client, agent_id,
                                                                       field):
    response = admin_client.post(page_url(agent_id), {"based_on": "", "note": "", **FORGED[field]})
    assert response.status_code == 403
    assert not AgentVersion.objects.exists()


@pytest.mark.parametrize("agent_id, changes, stored", [
    ("free", {"instructions": "Edited.", "tools": ["alpha", "gamma"]}, {"instructions": "Edited.", "tools": ["alpha", "gamma"]}),
    ("instr", {"instructions": "Edited."}, {"instructions": "Edited."}),
    ("tooled", {"tools": ["beta"], "description__beta": "B!"}, {"tools": ["beta"], "tool_descriptions": {"beta": "B!"}}),
    ("desc", {"description__alpha": "A!"}, {"tool_descriptions": {"alpha": "A!"}}),
])
def test_an_allowed_edit_saves_a_draft(editor_admin_site, admin_client, agent_id, changes, stored):
    response = admin_client.post(page_url(agent_id), current_post(admin_client, agent_id, **changes), follow=True)
    assert "Saved v1 as a draft." in response.content.decode()
    version = AgentVersion.objects.get()
    assert (version.agent.agent_id, version.number, version.status, version.overrides, version.author_name) == (
        agent_id, 1, "draft", stored, "admin")


@pytest.mark.parametrize("changes, message", [
    ({"instructions": ""}, "Instructions cannot be empty."),
    ({"instructions": "x" * (100 * 1024 + 1)}, "Instructions are limited to 100 KB."),
    ({"tools": ["alpha", "nope"]}, "Unknown tool: nope."),
    ({"description__nope": "x"}, "Unknown tool: nope."),
    ({}, "Nothing to save: no field changed."),
])
def test_bad_input_is_a_form_error_and_stores_nothing(editor_admin_site, admin_client, changes, message):
    response = admin_client.post(page_url("free"), current_post(admin_client, "free", **changes))
    assert response.status_code == 200
    assert message in response.content.decode()
    assert not AgentVersion.objects.exists()


def test_a_save_over_a_newer_version_is_refused_with_a_clear_message(editor_admin_site, admin_client):
    stale = current_post(admin_client, "free", instructions="Mine.")
    admin_client.post(page_url("free"), current_post(admin_client, "free", instructions="First."))
    response = admin_client.post(page_url("free"), stale)
    page = response.content.decode()
    assert "Not saved: admin saved v1 of free at " in page
    assert "while you were editing the code&#x27;s definition. Reload the page to see v1" in page
    assert list(AgentVersion.objects.values_list("overrides", flat=True)) == [{"instructions": "First."}]


def test_a_user_without_edit_permissions_sees_a_read_only_page(editor_admin_site):
    viewer = client_for(staff("val"))
    page = viewer.get(page_url("free")).content.decode()
    for marker in INPUTS.values():
        assert marker not in page
    assert "Read-only: no permission." in page
    assert "Save as a new draft" not in page and "Publish" not in page
    assert viewer.post(page_url("free"), {"based_on": "", "instructions": "x"}).status_code == 403
    assert not AgentVersion.objects.exists()


def test_each_permission_opens_its_own_fields(editor_admin_site):
    ivy = client_for(staff("ivy", "edit_agent_instructions"))
    page = ivy.get(page_url("free")).content.decode()
    assert INPUTS["instructions"] in page and INPUTS["tools"] not in page and INPUTS["tool_descriptions"] not in page
    assert ivy.post(page_url("free"), {"based_on": "", "tools": ["alpha"]}).status_code == 403
    tom = client_for(staff("tom", "edit_agent_tools"))
    page = tom.get(page_url("free")).content.decode()
    assert INPUTS["instructions"] not in page and INPUTS["tools"] in page and INPUTS["tool_descriptions"] in page
    assert tom.post(page_url("free"), {"based_on": "", "instructions": "x"}).status_code == 403
    assert not AgentVersion.objects.exists()


def test_publishing_needs_its_permission(editor_admin_site):
    version = version_save(agent_id="free", changes={"instructions": "Draft."}, based_on_id=None)
    url = reverse("admin:agents_agentdefinition_publish", args=[version.agent_id, version.pk])
    ivy = client_for(staff("ivy", "edit_agent_instructions"))
    assert ivy.post(url).status_code == 403
    assert "Publish</button>" not in ivy.get(page_url("free")).content.decode()
    pat = client_for(staff("pat", "publish_agent_version"))
    response = pat.post(url, follow=True)
    assert "Published v1: the next runs use it." in response.content.decode()
    assert AgentVersion.objects.get().status == "published"


def test_roll_back_and_compare_from_the_page(editor_admin_site, admin_client):
    v1 = version_save(agent_id="free", changes={"instructions": "One."}, based_on_id=None)
    v2 = version_save(agent_id="free", changes={"instructions": "Two.", "tools": ["alpha"]}, based_on_id=v1.pk)
    version_publish(version_id=v2.pk)
    url = reverse("admin:agents_agentdefinition_rollback", args=[v1.agent_id])
    page = admin_client.post(url, {"to": str(v1.pk)}, follow=True).content.decode()
    assert "Rolled back: v3 is published (Roll back to v1.)" in page
    assert AgentVersion.objects.get(status="published").number == 3
    compare = admin_client.get(reverse("admin:agents_agentdefinition_compare", args=[v1.agent_id]),
                               {"a": str(v1.pk), "b": str(v2.pk)}).content.decode()
    assert "<h2>v1 → v2</h2>" in compare
    assert '<span class="del">-One.</span>\n<span class="add">+Two.</span>' in compare
    assert '<span class="del">- beta</span>' in compare
    same = admin_client.get(reverse("admin:agents_agentdefinition_compare", args=[v1.agent_id]),
                            {"a": str(v1.pk), "b": str(AgentVersion.objects.get(number=3).pk)}).content.decode()
    assert '<p id="no-changes">No differences.</p>' in same


def test_an_override_the_code_now_locks_is_shown_as_ignored(editor_admin_site, admin_client):
    definition = AgentDefinition.objects.get(agent_id="instr")
    AgentVersion.objects.create(agent=definition, number=1, overrides={"instructions": "I.", "tools": ["gamma"]})
    page = admin_client.get(page_url("instr")).content.decode()
    assert "Tool membership in the latest version: ignored: locked by code" in page
    assert "Instructions in the latest version" not in page


@pytest.mark.django_db(transaction=True)  # the streamed run reads the database from another thread
def test_try_it_streams_a_drafts_answer_without_publishing(editor_admin_site, admin_client):
    v1 = version_save(agent_id="free", changes={"instructions": "Draft!"}, based_on_id=None)
    url = reverse("admin:agents_agentdefinition_try", args=[v1.agent_id])
    response = admin_client.post(url, {"prompt": "hello", "version": str(v1.pk)})
    assert response.streaming and response["Content-Type"] == "application/x-ndjson; charset=utf-8"
    frames = [json.loads(line) for line in async_to_sync(collect)(response).decode().splitlines()]
    assert [f["text"] for f in frames if f["type"] == "text"] == [
        "system: Draft! | tools: alpha=The alpha tool., beta=The beta tool."]
    assert AgentVersion.objects.get().status == "draft"
    viewer = client_for(staff("val"))
    assert viewer.post(url, {"prompt": "hello"}).status_code == 403


def test_agents_cannot_be_added_or_deleted_by_hand(editor_admin_site, admin_client):
    assert admin_client.get(reverse("admin:agents_agentdefinition_add")).status_code == 403
    listing = admin_client.get(reverse("admin:agents_agentdefinition_changelist")).content.decode()
    assert "delete_selected" not in listing
    assert "instructions, tool membership, tool descriptions" in listing and "read-only" in listing
