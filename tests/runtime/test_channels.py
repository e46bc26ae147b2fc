"""The runtime side of channels: the ``channels`` option, the adapters (credentials never in their
repr) and the pure rules (thread keys, prefixes, mentions, splitting, the failure text)."""

import pytest

from agents.runtime import Agent, AgentConfigError, InMemoryMemory, create_github_adapter, create_slack_adapter
from agents.runtime.channels.text import (failed_text, github_thread_key, mentions, sender_prefix, slack_thread_key,
                                          split_text)

SLACK = dict(bot_token="xoxb-secret-token", signing_secret="sign-secret")


def agent(**channels):
    return Agent(id="a", instructions="x", model="local/echo", memory=InMemoryMemory(), channels=channels)


def test_an_agent_takes_the_issues_channels_option():
    handler = lambda message, default: default(message)  # noqa: E731
    built = agent(adapters={"slack": create_slack_adapter(**SLACK),
                            "github": create_github_adapter(webhook_secret="w", token="t", bot_login="ops-bot")},
                  thread_context={"max_messages": 5}, handlers={"on_mention": handler, "on_direct_message": False})
    config = built.channels
    assert (config.context_messages, config.handler("on_mention"), config.handler("on_direct_message"),
            config.handler("on_subscribed_message")) == (5, handler, False, None)
    assert config.adapter("slack").api_url == "https://slack.com/api/"
    assert config.adapter("github").trusted == ("OWNER", "MEMBER", "COLLABORATOR")


def test_mastras_camel_case_keys_are_accepted():
    config = agent(adapters={"slack": create_slack_adapter(**SLACK)}, threadContext={"maxMessages": 0}).channels
    assert config.context_messages == 0


@pytest.mark.parametrize(("channels", "field"), [
    ({"adapters": {}}, "channels.adapters"),
    ({"adapters": {"teams": object()}}, "channels.adapters.teams"),
    ({"adapters": {"slack": "xoxb"}}, "channels.adapters.slack"),
    ({"adapters": {"slack": create_slack_adapter(**SLACK)}, "thread_context": {"max_messages": -1}},
     "channels.thread_context.max_messages"),
    ({"adapters": {"slack": create_slack_adapter(**SLACK)}, "handlers": {"on_reaction": print}},
     "channels.handlers.on_reaction"),
    ({"adapters": {"slack": create_slack_adapter(**SLACK)}, "handlers": {"on_mention": "yes"}},
     "channels.handlers.on_mention"),
    ({"adapters": {"slack": create_slack_adapter(**SLACK)}, "routes": {}}, "channels.routes"),
])
def test_a_bad_channels_option_names_its_field(channels, field):
    with pytest.raises(AgentConfigError) as info:
        agent(**channels)
    assert info.value.field == field


def test_channels_need_memory():
    with pytest.raises(AgentConfigError) as info:
        Agent(id="a", instructions="x", model="local/echo", channels={"adapters": {"slack": create_slack_adapter(**SLACK)}})
    assert info.value.message == "channels: needs memory=Memory() on the agent (one platform thread = one memory thread)"


def test_adapters_check_their_credentials_and_never_show_them():
    with pytest.raises(AgentConfigError) as info:
        create_slack_adapter(bot_token="", signing_secret="s")
    assert info.value.field == "channels.adapters.slack.bot_token"
    with pytest.raises(AgentConfigError) as info:
        create_github_adapter(webhook_secret="w")
    assert info.value.problem == "takes token=..., or app_id=... with private_key=... (one of the two)"
    with pytest.raises(AgentConfigError):
        create_github_adapter(webhook_secret="w", app_id=1)
    slack = create_slack_adapter(**SLACK)
    github = create_github_adapter(webhook_secret="hook-secret", token="ghp_secret", bot_login="ops-bot")
    shown = repr(slack) + repr(github) + repr(agent(adapters={"slack": slack}).channels)
    assert "secret" not in shown and "ghp_" not in shown and "xoxb" not in shown


def test_thread_keys_and_prefixes():
    assert slack_thread_key("T1", "C1", "1700.1") == "T1:C1:1700.1"
    assert github_thread_key("octo/repo", 7) == "octo/repo#7"
    assert sender_prefix("Alice", "U123") == "[Alice (@U123)]: "
    assert sender_prefix("  ", "U123") == "[U123 (@U123)]: "


@pytest.mark.parametrize(("text", "found"), [
    ("@ops-bot hi", True), ("hi @OPS-BOT.", True), ("cc @ops-bot-two", False), ("mail me@ops-bot", False),
    ("no mention", False)])
def test_mentions_follow_githubs_login_boundaries(text, found):
    assert mentions(text, "ops-bot") is found


def test_split_text_cuts_at_a_newline_or_space_and_keeps_earlier_parts():
    assert split_text("", 10) == [""]
    assert split_text("abcdefghij", 10) == ["abcdefghij"]
    assert split_text("hello world again", 10) == ["hello ", "world ", "again"]
    assert split_text("line one\nline two", 12) == ["line one\n", "line two"]
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    grown = split_text("hello world again and more", 10)
    assert grown[:2] == ["hello ", "world "]


def test_the_failure_text_is_short():
    assert failed_text("timeout") == "Sorry, I could not finish this answer (timeout)."
    assert len(failed_text("x" * 5000)) < 260
