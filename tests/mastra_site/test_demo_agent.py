"""The demo agent ``ops-assistant`` of ``mastra_site.mastra`` (offline: ``local/echo``)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from asgiref.sync import sync_to_async

from agents.models import Message, Thread
from agents.registry import get_mastra
from agents.runtime import Agent
from agents.runtime.mastra import AgentNotFound
from mastra_site.mastra import calculate, calculator_tool, mastra, ops_agent


@pytest.fixture(autouse=True)
def no_error_is_logged(caplog):
    """A run that ends well may still have logged a failure on the side (a span export refused by a
    locked database): that fails the test too."""
    yield
    errors = [f"{r.name}: {r.getMessage()}" for when in ("setup", "call") for r in caplog.get_records(when)
              if r.levelno >= logging.ERROR]
    assert errors == []


def test_get_mastra_finds_the_demo_agent():
    assert get_mastra() is mastra
    agent = get_mastra().get_agent("ops-assistant")
    assert agent is ops_agent
    assert isinstance(agent, Agent)
    assert (agent.id, agent.name) == ("ops-assistant", "Ops Assistant")
    assert set(get_mastra().get_agents()) == {"ops-assistant", "support-writer", "policy-bot", "triage-notes"}
    with pytest.raises(AgentNotFound) as info:
        get_mastra().get_agent("nobody")
    assert info.value.code == "agent_not_found"


@pytest.mark.asyncio
async def test_the_agent_offers_its_tools_to_the_model():
    tools = await ops_agent.get_tools()
    assert sorted(tools) == ["calculate", "current-time", "restart-service"]
    assert tools["calculate"].spec("calculate")["parameters"]["required"] == ["expression"]


@pytest.mark.asyncio
@pytest.mark.parametrize("expression, value", [
    ("2*(3+4)", 14), ("6*7", 42), ("-2**3", -8), ("7/2", 3.5), ("7//2", 3), ("7%4", 3), ("1.5+1", 2.5),
])
async def test_calculate_evaluates_arithmetic(expression, value):
    assert await calculator_tool.run({"expression": expression}, None) == {"expression": expression, "value": value}


@pytest.mark.asyncio
@pytest.mark.parametrize("expression", [
    "__import__('os')", "open('/etc/passwd')", "x + 1", "(1).__class__", "'a' * 3", "True + 1", "2 ** 1000",
    "[1, 2]",
])
async def test_calculate_rejects_anything_but_arithmetic(expression):
    with pytest.raises(ValueError):
        await calculator_tool.run({"expression": expression}, None)


def test_calculate_reports_bad_syntax_and_division_by_zero():
    with pytest.raises(ValueError, match="cannot evaluate '1/0'"):
        calculate({"expression": "1/0"})
    with pytest.raises(ValueError, match="cannot evaluate '2\\*\\('"):
        calculate({"expression": "2*("})


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_agent_answers_a_calculation_with_the_tool():
    result = await get_mastra().get_agent("ops-assistant").generate('/tool calculate {"expression": "6*7"}')
    assert result.error is None
    assert result.finish_reason == "stop"
    assert "42" in result.text
    assert result.text == 'echo: tool calculate returned {"expression": "6*7", "value": 42}'
    assert [c["payload"]["toolName"] for c in result.tool_calls] == ["calculate"]
    assert [r["payload"]["result"] for r in result.tool_results] == [{"expression": "6*7", "value": 42}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_a_dangerous_expression_ends_as_a_tool_error():
    result = await ops_agent.generate("/tool calculate {\"expression\": \"__import__('os')\"}")
    assert result.finish_reason == "stop"
    [tool_result] = [r["payload"] for r in result.tool_results]
    assert tool_result["isError"] is True
    assert tool_result["result"] == {
        "error": "ValueError: cannot evaluate \"__import__('os')\": only numbers and + - * / // % ** are allowed"}
    assert result.text == ('echo: tool calculate failed {"error": "ValueError: cannot evaluate \\"__import__(\'os\')'
                           '\\": only numbers and + - * / // % ** are allowed"}')


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_the_agent_remembers_and_titles_its_threads():
    mem = {"resource": "ops-user", "thread": "ops-thread"}
    first = await ops_agent.generate("hello ops", memory=mem)
    assert first.text == "echo: hello ops"
    # generate_title=True: the title arrives in the background (local/echo cannot write one: it is
    # made from the first message)
    title = ""
    for _ in range(250):
        title = await sync_to_async(lambda: Thread.objects.get(thread_id="ops-thread").title)()
        if title:
            break
        await asyncio.sleep(0.02)
    assert title == "hello ops"
    second = await ops_agent.generate('/tool calculate {"expression": "2*(3+4)"}', memory=mem)
    assert second.text == 'echo: tool calculate returned {"expression": "2*(3+4)", "value": 14}'
    assert [m["role"] for m in second.remembered_messages] == ["user", "assistant"]
    roles = await sync_to_async(lambda: list(Message.objects.filter(thread__thread_id="ops-thread").order_by("id")
                                             .values_list("role", flat=True)))()
    assert roles == ["user", "assistant", "user", "assistant", "assistant"]  # the tool result is on its call
    assert (await sync_to_async(lambda: Thread.objects.get(thread_id="ops-thread").title)()) == "hello ops"


@pytest.mark.parametrize("expression, problem", [
    ("(-1)**0.5", "the result is not a real number"),
    ("9**9**9", "exponent too large"),
    ("(10**100)**4", "result would have more than 300 digits"),
    ("9" * 200 + "*" + "9" * 200, "result would have more than 300 digits"),
    ("1" + "0" * 301, "numbers are limited to 300 digits"),
    ("1e301", "numbers are limited to 300 digits"),
    ("1e200*1e200", "result would have more than 300 digits"),
])
def test_calculate_refuses_results_that_are_not_bounded_real_numbers(expression, problem):
    with pytest.raises(ValueError) as info:
        calculate({"expression": expression})
    assert str(info.value) == f"cannot evaluate {expression!r}: {problem}"


@pytest.mark.asyncio
# the site's agents read the admin editor's published overrides, and the run's spans are saved from
# asgiref's worker thread, on a connection of its own: the test's connection must not hold a
# transaction open meanwhile (on SQLite its write lock kept the span export waiting for the busy
# timeout, then failing with "database is locked")
@pytest.mark.django_db(transaction=True)
async def test_a_complex_result_reaches_the_model_as_a_tool_error():
    result = await ops_agent.generate('/tool calculate {"expression": "(-1)**0.5"}')
    assert result.tool_results[0]["payload"]["result"] == {
        "error": "ValueError: cannot evaluate '(-1)**0.5': the result is not a real number"}


def test_the_demo_agent_has_channels_only_with_their_credentials():
    from mastra_site.mastra import demo_channels

    assert demo_channels({}) is None
    slack_only = demo_channels({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s"})
    assert list(slack_only["adapters"]) == ["slack"]
    both = demo_channels({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "GITHUB_WEBHOOK_SECRET": "w",
                          "GITHUB_TOKEN": "ghp_1", "GITHUB_BOT_LOGIN": "ops-bot"})
    assert sorted(both["adapters"]) == ["github", "slack"]
    assert both["adapters"]["github"].bot_login == "ops-bot"
    assert demo_channels({"GITHUB_WEBHOOK_SECRET": "w"}) is None  # no token, no app key


def test_the_demo_agent_falls_back_to_the_offline_echo_model(settings):
    from mastra_site.mastra import demo_model

    settings.MASTRA_DEFAULT_MODEL = "openai/gpt-4o-mini"
    assert demo_model() == [{"model": "openai/gpt-4o-mini", "max_retries": 2}, {"model": "local/echo"}]
    settings.MASTRA_DEFAULT_MODEL = "local/echo"
    assert demo_model() == "local/echo"


def test_the_demo_agent_speaks_and_listens_only_with_an_openai_key_or_server():
    from agents.runtime import CompositeVoice, OpenAIVoice
    from mastra_site.mastra import demo_voice

    assert demo_voice({}) is None
    assert demo_voice({"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "sk-ant"}) is None
    for env in ({"OPENAI_API_KEY": "sk-1"}, {"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"}):
        voice = demo_voice(env)
        assert isinstance(voice, CompositeVoice)
        assert isinstance(voice.input, OpenAIVoice) and isinstance(voice.output, OpenAIVoice)
        assert (voice.speaks, voice.listens) == (True, True)  # the chat page's microphone and Play buttons
    # the site's agent takes the voice demo_voice() gives for the environment it started in
    assert ops_agent.has_voice is (demo_voice() is not None)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_every_demo_agent_has_memory_and_example_prompts():
    for agent in mastra.get_agents().values():
        assert agent.memory is not None, agent.id
        assert agent.static_metadata()["examples"], agent.id


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_restarting_a_service_waits_for_an_operators_approval():
    from agents.models import ToolApproval

    mem = {"resource": "ops-user", "thread": "ops-approval"}
    first = await ops_agent.generate('/tool restart-service {"service": "billing-api"}', memory=mem)
    assert first.finish_reason == "suspended"
    approval = await sync_to_async(ToolApproval.objects.get)()
    assert (approval.tool_name, approval.args) == ("restart-service", {"service": "billing-api"})
    resumed = await ops_agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id=approval.tool_call_id)
    [result] = [r["payload"]["result"] for r in resumed.tool_results]
    assert (result["service"], result["restarted"]) == ("billing-api", True)


@pytest.mark.django_db(transaction=True)
@pytest.mark.asyncio
async def test_each_answer_of_the_ops_assistant_is_scored_for_conciseness():
    from agents.observability import Score
    from agents.runtime.scoring import scoring_drain
    from mastra_site.mastra import CONCISE_CHARS, concise_score

    short = await ops_agent.generate("hello ops")
    long = await ops_agent.generate("x" * 1194)  # "echo: " + 1194 characters = 1200
    assert await scoring_drain()
    scores = await sync_to_async(lambda: list(Score.objects.order_by("created_at").values_list(
        "run_id", "scorer_id", "score", "reason")))()
    assert sorted(scores) == sorted([(short.run_id, "conciseness", 1.0, "15 characters"),
                                     (long.run_id, "conciseness", 0.5, "1200 characters")])
    assert concise_score({"run": {"output": [{"role": "assistant", "content": "y" * CONCISE_CHARS}]}}) == 1.0
