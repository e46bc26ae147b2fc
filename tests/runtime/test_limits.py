"""The limits on what callers send (``agents.runtime.limits``), the signal edges they guard, and
the redaction of credentials (``agents.runtime.redaction``). Pure: no database."""

from __future__ import annotations

import pytest

from agents.runtime import Agent
from agents.runtime.errors import AgentConfigError, ModelError, NotificationError, SignalError
from agents.runtime.limits import Limits, check_pending_inputs, configure_limits, current_limits
from agents.runtime.notifications.validation import validate_notification, validate_notifications, validate_target
from agents.runtime.options import validate_options
from agents.runtime.redaction import options_for_storage, redact_text
from agents.runtime.signal import create_signal, message_to_signal, render_signal

NOTE = {"source": "github", "kind": "ci", "summary": "CI failed"}


@pytest.fixture
def limits():
    """Set limits for one test; the previous ones come back afterwards."""
    before = current_limits()
    yield configure_limits
    configure_limits(**{name: getattr(before, name) for name in Limits.__dataclass_fields__})


def error(exc_type, fn, *args, **kwargs):
    with pytest.raises(exc_type) as info:
        fn(*args, **kwargs)
    return info.value


# -- configuration -------------------------------------------------------------------------------

def test_the_defaults():
    assert Limits() == Limits(max_signal_bytes=1048576, max_attributes=64, max_notifications_per_call=100,
                              max_pending_inputs=1000, max_steps=1000, max_retries=10, keep_provider_payloads=False)


def test_a_bad_limit_is_refused(limits):
    assert str(error(AgentConfigError, limits, max_steps=0)) == "limits.max_steps: must be a whole number of at least 1"
    assert str(error(AgentConfigError, limits, max_retries=-1)) == (
        "limits.max_retries: must be a whole number of at least 0")
    assert str(error(AgentConfigError, limits, max_attributes=True)) == (
        "limits.max_attributes: must be a whole number of at least 1")
    assert str(error(AgentConfigError, limits, keep_provider_payloads="yes")) == (
        "limits.keep_provider_payloads: must be true or false")
    assert str(error(AgentConfigError, limits, max_things=3)) == "limits.max_things: unknown limit"
    assert current_limits() == Limits()  # nothing half-applied


# -- max_steps and max_retries ---------------------------------------------------------------

def test_max_steps_and_max_retries_have_upper_bounds(limits):
    assert validate_options({"max_steps": 1000})["max_steps"] == 1000
    assert str(error(AgentConfigError, validate_options, {"max_steps": 1001})) == (
        "options.max_steps: must be at most 1000")
    assert validate_options({"model_settings": {"maxRetries": 10}})["model_settings"] == {"max_retries": 10}
    assert str(error(AgentConfigError, validate_options, {"model_settings": {"max_retries": 11}})) == (
        "options.model_settings.max_retries: must be at most 10")
    limits(max_steps=5, max_retries=0)
    assert str(error(AgentConfigError, validate_options, {"max_steps": 6})) == "options.max_steps: must be at most 5"
    assert str(error(AgentConfigError, validate_options, {"model_settings": {"max_retries": 1}})) == (
        "options.model_settings.max_retries: must be at most 0")


async def test_a_call_over_the_step_bound_fails_before_the_model_runs():
    agent = Agent(id="a", instructions="x", model="local/echo")
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("hi", max_steps=10**9)
    assert info.value.field == "options.max_steps"


# -- pending inputs ----------------------------------------------------------------------------

def test_pending_inputs_cap(limits):
    limits(max_pending_inputs=3)
    check_pending_inputs(2)
    exc = error(SignalError, check_pending_inputs, 3)
    assert (exc.code, exc.message) == ("too_many_pending_inputs",
                                       "the thread already has 3 inputs waiting (the limit is 3)")


# -- signals -------------------------------------------------------------------------------------

def test_names_are_matched_in_full():
    for name in ("user\n", "user\nx", "a b", "1a", ""):
        exc = error(SignalError, create_signal, {"type": "notification", "tag_name": name, "contents": "x"})
        assert (exc.code, exc.message) == ("invalid_tag_name", f"Invalid signal XML tag name: {name}")
    exc = error(SignalError, create_signal, {"type": "user", "contents": "x", "attributes": {"ok\n": 1}})
    assert exc.code == "invalid_attribute_name"
    assert create_signal({"type": "notification", "tag_name": "ci.run-1_x", "contents": "x"})["tagName"] == "ci.run-1_x"


@pytest.mark.parametrize("value", ["a\nb", "tab\there", "cr\r", "nul\x00", "esc\x1b[31m", "del\x7f"])
def test_control_characters_in_attribute_values_are_refused(value):
    exc = error(SignalError, create_signal, {"type": "user", "contents": "x", "attributes": {"from": value}})
    assert (exc.code, exc.message) == ("invalid_attribute_value",
                                       "attributes.from: control characters are not allowed in attribute values")


def test_printable_attribute_values_are_escaped_not_refused():
    signal = create_signal({"type": "user", "contents": "<b>", "attributes": {"from": 'é "q" <x> & ü'}})
    assert render_signal(signal)["content"] == '<user from="é &quot;q&quot; &lt;x&gt; &amp; ü">&lt;b&gt;</user>'


@pytest.mark.parametrize("bad", ["", "a" * 65, "a b", "a\nb", "id/1", "<x>", 5, ["a"], {"a": 1}])
def test_a_caller_signal_id_must_be_at_most_64_safe_characters(bad):
    exc = error(SignalError, create_signal, {"type": "user", "contents": "x", "id": bad})
    assert (exc.code, exc.message) == (
        "invalid_signal_id", "a signal id must be a string of 1 to 64 letters, digits, '_', '.', ':' or '-'")


def test_a_good_caller_signal_id_is_kept():
    assert create_signal({"type": "user", "contents": "x", "id": "msg:2026-12.01_" + "a" * 49})["id"] == \
        "msg:2026-12.01_" + "a" * 49
    assert message_to_signal({"contents": "x", "id": "m-1"})["id"] == "m-1"


def test_one_size_cap_covers_contents_attributes_and_metadata(limits):
    limits(max_signal_bytes=1024)
    base = {"type": "notification", "contents": "x" * 500}
    create_signal({**base, "metadata": {"m": "y" * 400}})
    for extra in ({"metadata": {"m": "y" * 600}}, {"attributes": {"a": "y" * 600}},
                  {"provider_options": {"p": {"q": "y" * 600}}}):
        exc = error(SignalError, create_signal, {**base, **extra})
        assert (exc.code, exc.message) == ("signal_too_large", "the signal is larger than 1024 bytes")


def test_attributes_per_signal_are_capped(limits):
    limits(max_attributes=3)
    create_signal({"type": "user", "contents": "x", "attributes": {"a": 1, "b": 2, "c": 3}})
    exc = error(SignalError, create_signal, {"type": "user", "contents": "x", "attributes": {"a": 1, "b": 2, "c": 3,
                                                                                         "d": 4}})
    assert (exc.code, exc.message) == ("too_many_attributes", "attributes: more than 3 attributes")


def test_multimodal_contents_escape_every_text_part():
    """Every text part is escaped and wrapped (Mastra leaves later parts raw; see docs/security.md)."""
    signal = create_signal({"type": "notification", "contents": [
        {"type": "text", "text": "<a>"}, {"type": "image", "image": "data:image/png;base64,aGk="},
        {"type": "text", "text": "<b>"}]})
    assert render_signal(signal)["content"] == [
        {"type": "text", "text": "<notification>&lt;a&gt;</notification>"},
        {"type": "image", "image": "data:image/png;base64,aGk="},
        {"type": "text", "text": "<notification>&lt;b&gt;</notification>"}]


# -- notifications -----------------------------------------------------------------------------

@pytest.mark.parametrize("field,value", [
    ("summary", "bad\x00"), ("source", "git\x00hub"), ("kind", "c\x00i"), ("dedupe_key", "k\x00"),
    ("coalesce_key", "\x00"), ("source_id", "id\x00"), ("payload", {"a": ["x\x00"]}), ("payload", {"k\x00": 1}),
    ("metadata", {"deep": {"x": "\x00"}}),
])
def test_a_nul_character_in_any_notification_field_is_refused(field, value):
    exc = error(NotificationError, validate_notification, {**NOTE, field: value})
    assert (exc.code, exc.message, exc.details) == (
        "invalid_notification", f"{field} must not contain a NUL character", {"field": field})


def test_a_nul_character_in_an_attribute_is_refused():
    exc = error(NotificationError, validate_notification, {**NOTE, "attributes": {"a": "x\x00"}})
    assert (exc.code, exc.message) == ("invalid_attributes",
                                       "attributes.a: control characters are not allowed in attribute values")


@pytest.mark.parametrize("field,value,message", [
    ("source", "s" * 101, "source is longer than 100 characters"),
    ("kind", "k" * 101, "kind is longer than 100 characters"),
    ("dedupe_key", "d" * 256, "dedupe_key must be a non-empty string of at most 255 characters"),
    ("summary", "s" * 16_001, "summary is longer than 16000 characters"),
])
def test_a_value_longer_than_its_column_is_refused(field, value, message):
    exc = error(NotificationError, validate_notification, {**NOTE, field: value})
    assert (exc.code, exc.message) == ("invalid_notification", message)


@pytest.mark.parametrize("resource_id,thread_id,field", [
    ("r" * 256, "t", "resource_id"), ("r", "t" * 256, "thread_id"), ("r", "team\x1fgeneral", "thread_id"),
    ("r\x00", "t", "resource_id"),
])
def test_a_target_longer_than_its_column_or_with_a_control_character_is_refused(resource_id, thread_id, field):
    exc = error(NotificationError, validate_target, resource_id, thread_id)
    assert (exc.code, exc.message) == (
        "invalid_target", f"{field} must be at most 255 characters without control characters")
    validate_target("r" * 255, "t" * 255)


def test_one_size_cap_covers_a_whole_notification(limits):
    limits(max_signal_bytes=2048)
    validate_notification({**NOTE, "payload": {"p": "x" * 1500}})
    for extra in ({"payload": {"p": "x" * 2048}}, {"metadata": {"m": "x" * 2048}},
                  {"summary": "x" * 1000, "payload": "y" * 1100}):
        exc = error(NotificationError, validate_notification, {**NOTE, **extra})
        assert (exc.code, exc.message) == ("notification_too_large", "the notification is larger than 2048 bytes")


def test_notifications_per_call_and_attributes_are_capped(limits):
    limits(max_notifications_per_call=2, max_attributes=1)
    assert len(validate_notifications([NOTE, NOTE])) == 2
    exc = error(NotificationError, validate_notifications, [NOTE, NOTE, NOTE])
    assert (exc.code, exc.message) == ("too_many_notifications", "more than 2 notifications in one call")
    exc = error(NotificationError, validate_notification, {**NOTE, "attributes": {"a": 1, "b": 2}})
    assert (exc.code, exc.message) == ("invalid_attributes", "attributes: more than 1 attributes")


# -- redaction ---------------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("connect to https://bob:hunter2@api.example.com/v1 failed", "connect to https://bob:[redacted]@api.example.com/v1 failed"),
    ("postgres://u:p%40ss@db:5432/x", "postgres://u:[redacted]@db:5432/x"),
    ("Authorization: Bearer abc.def-ghi", "Authorization: Bearer [redacted]"),
    ("Incorrect API key provided: sk-proj-AbC123456789", "Incorrect API key provided: sk-[redacted]"),
    ("GET /v1?key=AIzaSyA1234567890abcdefghijklmno&alt=sse", "GET /v1?key=[redacted]&alt=sse"),
    ("x-api-key: abc123 rejected", "x-api-key: [redacted] rejected"),
    ("provider 'openai' needs an API key: set OPENAI_API_KEY", "provider 'openai' needs an API key: set OPENAI_API_KEY"),
    ("https://api.example.com/v1 timed out", "https://api.example.com/v1 timed out"),
])
def test_credentials_in_error_text_are_redacted(text, expected):
    assert redact_text(text) == expected


def test_a_model_error_is_redacted_when_it_is_made():
    exc = ModelError("openai connection to https://u:pw@h/v1 failed: sk-secret123456", status=401)
    assert (exc.message, str(exc), exc.to_dict()["message"]) == (
        "openai connection to https://u:[redacted]@h/v1 failed: sk-[redacted]",) * 3


def test_options_for_storage_keep_no_credentials():
    options = {
        "model": {"id": "openai/gpt-4o", "apiKey": "sk-x1234567", "headers": {"Authorization": "Bearer t"},
                  "baseURL": "https://u:pw@llm.internal/v1"},
        "model_settings": {"temperature": 0.2, "headers": {"X-Api-Key": "k"}},
        "provider_options": {"openai": {"api_key": "k", "user": "u1"}, "anthropic": {"x-api-key": "k"}},
        "max_steps": 3,
    }
    assert options_for_storage(options) == {
        "model": {"id": "openai/gpt-4o", "baseURL": "https://u:[redacted]@llm.internal/v1"},
        "model_settings": {"temperature": 0.2},
        "provider_options": {"openai": {"user": "u1"}, "anthropic": {}},
        "max_steps": 3,
    }
    assert options["model"]["apiKey"] == "sk-x1234567"  # the caller's options are left alone
