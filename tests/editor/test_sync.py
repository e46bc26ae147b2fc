"""Code agents → agent definitions: added, updated, marked gone with their history kept."""

import pytest

from agents.editor.models import AgentDefinition, AgentVersion
from agents.editor.services import version_save
from agents.editor.sync import agents_sync
from agents.runtime import Agent, Mastra, create_tool

pytestmark = pytest.mark.django_db


def site(*agents):
    return Mastra(agents={agent.id: agent for agent in agents})


def agent(agent_id, **kwargs):
    kwargs.setdefault("instructions", ["Line one.", "Line two."])
    return Agent(id=agent_id, model="local/echo", **kwargs)


def test_migrate_synced_the_sites_agents():
    assert sorted(AgentDefinition.objects.values_list("agent_id", flat=True)) == [
        "ops-assistant", "policy-bot", "support-writer", "triage-notes"]
    ops = AgentDefinition.objects.get(agent_id="ops-assistant")
    assert ops.editor == {"instructions": True, "tools": {"description": True}, "model": True}
    assert ops.defaults["tools"] == ["calculate", "current-time", "restart-service"]
    assert AgentDefinition.objects.get(agent_id="policy-bot").editor is False


def test_a_new_agent_is_added_with_a_snapshot_of_its_code():
    AgentDefinition.objects.all().delete()
    tool = create_tool(id="t", description="Does t.", execute=lambda i: i)
    outcome = agents_sync(mastra=site(agent("a", name="Alpha", tools={"t": tool}, editor={"instructions": True})))
    assert outcome == {"added": ["a"], "updated": [], "gone": []}
    row = AgentDefinition.objects.get(agent_id="a")
    assert (row.name, row.model, row.present, row.editor) == ("Alpha", "local/echo", True, {"instructions": True})
    assert row.defaults == {"instructions": "Line one.\nLine two.", "tools": ["t"], "tool_descriptions": {"t": "Does t."},
                            "model": [{"model": "local/echo", "max_retries": 2, "enabled": True}]}


def test_an_agent_removed_from_code_is_marked_gone_and_keeps_its_versions():
    AgentDefinition.objects.all().delete()
    agents_sync(mastra=site(agent("a"), agent("b")))
    version_save(agent_id="b", changes={"instructions": "Edited."}, based_on_id=None)
    assert agents_sync(mastra=site(agent("a"))) == {"added": [], "updated": ["a"], "gone": ["b"]}
    gone = AgentDefinition.objects.get(agent_id="b")
    assert (gone.present, gone.gone_at is not None) == (False, True)
    assert AgentVersion.objects.filter(agent=gone).count() == 1
    assert agents_sync(mastra=site(agent("a"))) == {"added": [], "updated": ["a"], "gone": []}
    assert agents_sync(mastra=site(agent("a"), agent("b"))) == {"added": [], "updated": ["a", "b"], "gone": []}
    back = AgentDefinition.objects.get(agent_id="b")
    assert (back.present, back.gone_at) == (True, None)


def test_dynamic_instructions_and_tools_have_no_code_snapshot():
    AgentDefinition.objects.all().delete()
    agents_sync(mastra=site(Agent(id="d", instructions=lambda rc: "x", model=lambda rc: "local/echo",
                                  tools=lambda rc: {})))
    assert AgentDefinition.objects.get(agent_id="d").defaults == {"instructions": None, "tools": None,
                                                                   "tool_descriptions": {}, "model": None}


@pytest.mark.django_db(transaction=True)
async def test_the_start_up_job_syncs_the_configured_site(settings):
    from asgiref.sync import sync_to_async

    from agents.editor.sync import sync_at_start
    from agents.registry import get_mastra
    from mastra_site.workers import JOBS

    assert "editor-sync" in [job.name for job in JOBS]
    settings.MASTRA = "tests.editor.editor_agents:mastra"
    get_mastra.cache_clear()
    try:
        await sync_at_start()
    finally:
        get_mastra.cache_clear()
    present = await sync_to_async(lambda: sorted(AgentDefinition.objects.filter(present=True)
                                                 .values_list("agent_id", flat=True)))()
    assert present == ["boss", "careful", "desc", "free", "instr", "locked", "modeled", "tooled"]
