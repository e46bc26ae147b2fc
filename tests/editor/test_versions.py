"""Versions: save (optimistic locking), publish, roll back, diff; what runs pick up."""

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import User

from agents.editor.exceptions import InvalidOverride, LockedField, StaleVersion
from agents.editor.models import AgentVersion, EditorGeneration
from agents.editor.selectors import version_diffs
from agents.editor.services import version_publish, version_rollback, version_save
from agents.runtime import AgentConfigError

pytestmark = pytest.mark.django_db(transaction=True)
SITE_TOOLS = ("alpha", "beta", "gamma")


def save(agent_id, changes, based_on=None, **kwargs):
    return version_save(agent_id=agent_id, changes=changes, based_on_id=based_on.pk if based_on else None,
                        site_tools=SITE_TOOLS, **kwargs)


async def answer(agent, **options):
    result = await agent.generate("hi", **options)
    assert result.error is None
    return result.text


def test_each_save_is_a_new_numbered_draft_with_its_author(editor_site):
    alice = User.objects.create(username="alice")
    v1 = save("free", {"instructions": "One."}, author=alice, note="first")
    v2 = save("free", {"tools": ["alpha", "gamma"]}, based_on=v1)
    assert [(v.number, v.status, v.author_name, v.note) for v in (v1, v2)] == [
        (1, "draft", "alice", "first"), (2, "draft", "", "")]
    # the second save keeps the first one's instructions
    assert v2.overrides == {"instructions": "One.", "tools": ["alpha", "gamma"]}
    assert v2.based_on_id == v1.pk


def test_a_save_based_on_an_older_version_is_refused_and_stores_nothing(editor_site):
    bob = User.objects.create(username="bob")
    v1 = save("free", {"instructions": "One."})
    save("free", {"instructions": "Bob's."}, based_on=v1, author=bob)
    with pytest.raises(StaleVersion) as info:
        save("free", {"instructions": "Mine."}, based_on=v1)
    assert info.value.code == "stale_version"
    assert info.value.message.startswith("Not saved: bob saved v2 of free at ")
    assert info.value.message.endswith(" UTC while you were editing v1. Reload the page to see v2, then make your "
                                       "change again.")
    assert AgentVersion.objects.filter(agent__agent_id="free").count() == 2
    with pytest.raises(StaleVersion):
        save("free", {"instructions": "From the code."}, based_on=None)


@pytest.mark.parametrize("agent_id, changes, field", [
    ("locked", {"instructions": "x"}, "instructions"),
    ("instr", {"tools": ["alpha"]}, "tools"),
    ("instr", {"tool_descriptions": {"alpha": "x"}}, "tool_descriptions"),
    ("tooled", {"instructions": "x"}, "instructions"),
    ("desc", {"tools": ["alpha"]}, "tools"),
])
def test_a_locked_field_is_refused(editor_site, agent_id, changes, field):
    with pytest.raises(LockedField) as info:
        save(agent_id, changes)
    assert (info.value.field, info.value.message) == (field, f"{field} cannot be edited: locked by the agent's code")
    assert not AgentVersion.objects.exists()


@pytest.mark.parametrize("changes, field, message", [
    ({"instructions": ""}, "instructions", "Instructions cannot be empty."),
    ({"instructions": "  \n"}, "instructions", "Instructions cannot be empty."),
    ({"instructions": "x" * (100 * 1024 + 1)}, "instructions", "Instructions are limited to 100 KB."),
    ({"tools": ["alpha", "nope"]}, "tools", "Unknown tool: nope."),
    ({"tool_descriptions": {"nope": "x"}}, "tool_descriptions.nope", "Unknown tool: nope."),
    ({"tool_descriptions": {"alpha": ""}}, "tool_descriptions.alpha", "A tool description cannot be empty."),
])
def test_bad_values_are_refused(editor_site, changes, field, message):
    with pytest.raises(InvalidOverride) as info:
        save("free", changes)
    assert (info.value.field, info.value.message) == (field, message)
    assert not AgentVersion.objects.exists()


def test_values_equal_to_the_code_are_not_stored(editor_site):
    v1 = save("free", {"instructions": "Code free.", "tools": ["beta", "alpha"],
                       "tool_descriptions": {"alpha": "The alpha tool.", "beta": "Beta!"}})
    assert v1.overrides == {"tool_descriptions": {"beta": "Beta!"}}


def test_one_version_is_published_and_each_publish_bumps_the_generation(editor_site):
    v1 = save("free", {"instructions": "One."})
    v2 = save("free", {"instructions": "Two."}, based_on=v1)
    version_publish(version_id=v1.pk)
    version_publish(version_id=v2.pk)
    assert list(AgentVersion.objects.order_by("number").values_list("status", flat=True)) == ["draft", "published"]
    assert EditorGeneration.objects.get(pk=1).value == 2


def test_a_roll_back_publishes_a_new_version_with_the_old_overrides(editor_site):
    v1 = save("free", {"instructions": "One."})
    v2 = save("free", {"instructions": "Two."}, based_on=v1)
    version_publish(version_id=v2.pk)
    v3 = version_rollback(agent_id="free", to_version_id=v1.pk, note="Two was wrong.")
    assert (v3.number, v3.status, v3.overrides, v3.note, v3.based_on_id) == (
        3, "published", {"instructions": "One."}, "Roll back to v1. Two was wrong.", v2.pk)
    v4 = version_rollback(agent_id="free", to_version_id=None)
    assert (v4.number, v4.overrides, v4.note) == (4, {}, "Roll back to the code's definition.")
    assert AgentVersion.objects.filter(status="published").get() == v4


def test_a_version_shows_its_changes_from_the_code_and_from_the_previous_version(editor_site):
    v1 = save("free", {"instructions": "Code free.\nBe brief."})
    v2 = save("free", {"tools": ["alpha", "gamma"], "tool_descriptions": {"alpha": "A!"}}, based_on=v1)
    diffs = version_diffs(v2)
    assert [c.field for c in diffs["code"]] == ["instructions", "tools", "tool_descriptions.alpha"]
    assert [c.field for c in diffs["previous"]] == ["tools", "tool_descriptions.alpha"]
    tools = diffs["previous"][0]
    assert tools.lines == ("- beta", "+ gamma")
    assert diffs["code"][0].lines[-1] == "+Be brief."
    assert diffs["previous"][1].lines == ("- The alpha tool.", "+ A!")


async def test_runs_use_the_published_version_and_a_call_may_select_a_draft(editor_site):
    free = editor_site.get_agent("free")
    assert await answer(free) == "system: Code free. | tools: alpha=The alpha tool., beta=The beta tool."
    v1 = await sync_to_async(save)("free", {"instructions": "Published.", "tools": ["gamma"],
                                            "tool_descriptions": {"gamma": "G."}})
    v2 = await sync_to_async(save)("free", {"instructions": "Draft."}, based_on=v1)
    await sync_to_async(version_publish)(version_id=v1.pk)
    assert await answer(free) == "system: Published. | tools: gamma=G."
    assert await answer(free, versions={"agents": {"free": {"status": "draft"}}}) == "system: Draft. | tools: gamma=G."
    assert await answer(free, versions={"agents": {"free": {"version_id": str(v1.pk)}}}) == (
        "system: Published. | tools: gamma=G.")
    assert await answer(free, versions={"agents": {"free": {"status": "published"}}}) == (
        "system: Published. | tools: gamma=G.")
    with pytest.raises(AgentConfigError) as info:
        await free.generate("hi", versions={"agents": {"free": {"version_id": "999999"}}})
    assert info.value.message == "options.versions.agents.free.version_id: no version 999999 of agent 'free'"
    assert v2.number == 2


async def test_a_draft_selected_for_a_sub_agent_reaches_its_call(editor_site):
    await sync_to_async(save)("free", {"instructions": "Sub draft."})
    boss = editor_site.get_agent("boss")
    draft = await boss.generate("/call agent-free", versions={"agents": {"free": {"status": "draft"}}})
    assert draft.text == "agent-free said: system: Sub draft. | tools: alpha=The alpha tool., beta=The beta tool."
    published = await boss.generate("/call agent-free")
    assert published.text.startswith("agent-free said: system: Code free. |")


async def test_an_override_saved_before_a_lock_is_ignored_at_run_time(editor_site):
    from agents.editor.models import AgentDefinition

    # stored while the agent allowed everything; its code now allows only the instructions
    definition = await AgentDefinition.objects.aget(agent_id="instr")
    await AgentVersion.objects.acreate(agent=definition, number=1, status="published", overrides={
        "instructions": "Edited.", "tools": ["gamma"], "tool_descriptions": {"alpha": "Old."}})
    assert await answer(editor_site.get_agent("instr")) == (
        "system: Edited. | tools: alpha=The alpha tool., beta=The beta tool.")
