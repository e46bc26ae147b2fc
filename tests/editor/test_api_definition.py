"""``GET /api/agents`` and ``GET /api/agents/<id>`` serve what the agent runs with: the code under the
editor's published version, within the agent's locks; ``hasDraft`` says whether a draft differs from
the published version."""

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client

from agents.editor.models import AgentDefinition, AgentVersion
from agents.editor.services import version_publish, version_rollback, version_save

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(editor_admin_site):
    client = Client()
    client.force_login(User.objects.create_user("reader", password="pw"))
    return client


def listing(client) -> dict:
    response = client.get("/api/agents")
    assert response.status_code == 200
    return json.loads(response.content)


def details(client, agent_id: str) -> dict:
    response = client.get(f"/api/agents/{agent_id}")
    assert response.status_code == 200
    return json.loads(response.content)


def shown(agent: dict) -> tuple:
    return agent["instructions"], {name: tool["description"] for name, tool in agent["tools"].items()}


def save(agent_id, changes, based_on=None):
    return version_save(agent_id=agent_id, changes=changes, based_on_id=based_on.pk if based_on else None)


def test_the_published_version_is_what_the_api_shows_and_has_draft_follows_the_drafts(client):
    code = ("Code free.", {"alpha": "The alpha tool.", "beta": "The beta tool."})
    assert shown(listing(client)["free"]) == code and listing(client)["free"]["hasDraft"] is False
    v1 = save("free", {"instructions": "Edited free.", "tools": ["beta", "gamma"],
                       "tool_descriptions": {"beta": "Edited beta."}})
    # a draft: the API still shows the code, and says there is a draft
    assert shown(listing(client)["free"]) == code and listing(client)["free"]["hasDraft"] is True
    version_publish(version_id=v1.pk)
    published = ("Edited free.", {"beta": "Edited beta.", "gamma": "The gamma tool."})
    agents = listing(client)
    assert shown(agents["free"]) == published and agents["free"]["hasDraft"] is False
    assert json.loads(agents["free"]["tools"]["gamma"]["inputSchema"]) == {"json": {
        "type": "object", "properties": {"q": {"type": "string"}}}}
    assert shown(details(client, "free")) == published and "hasDraft" not in details(client, "free")
    v2 = save("free", {"instructions": "Draft free."}, based_on=v1)
    assert shown(listing(client)["free"]) == published and listing(client)["free"]["hasDraft"] is True
    version_publish(version_id=v2.pk)
    agents = listing(client)
    assert shown(agents["free"]) == ("Draft free.", published[1]) and agents["free"]["hasDraft"] is False
    # a roll back is a new published version: no draft
    version_rollback(agent_id="free", to_version_id=None)
    assert shown(listing(client)["free"]) == code and listing(client)["free"]["hasDraft"] is False
    # other agents are untouched
    assert [a["hasDraft"] for a in listing(client).values()] == [False] * len(listing(client))


def test_a_draft_equal_to_the_published_version_is_no_draft(client):
    v1 = save("instr", {"instructions": "Same."})
    version_publish(version_id=v1.pk)
    # a later version that (within the locks) stores what is published: nothing differs
    AgentVersion.objects.create(agent=AgentDefinition.objects.get(agent_id="instr"), number=2,
                                overrides={"instructions": "Same.", "tools": ["alpha"]}, based_on=v1)
    agent = listing(client)["instr"]
    assert agent["hasDraft"] is False and shown(agent) == ("Same.", {"alpha": "The alpha tool.",
                                                                     "beta": "The beta tool."})


def test_a_stored_value_the_code_now_locks_is_not_shown(client):
    definition = AgentDefinition.objects.get(agent_id="desc")
    version = AgentVersion.objects.create(agent=definition, number=1, overrides={
        "instructions": "Locked out.", "tools": ["alpha"], "tool_descriptions": {"beta": "Edited beta."}})
    version_publish(version_id=version.pk)
    assert shown(details(client, "desc")) == ("Code desc.", {"alpha": "The alpha tool.", "beta": "Edited beta."})
