"""Mastra's stored message format and the runtime's model messages, both ways
(``agents.runtime.stored_messages``): one test per rule, with exact shapes."""

from __future__ import annotations

from agents.runtime.signal import create_signal, message_to_signal, render_signal
from agents.runtime.stored_messages import (is_stored, json_copy, signal_to_stored, stored_text, stored_to_signal,
                                            to_model_messages, to_stored_messages)

AT = "2026-01-02T03:04:05+00:00"


def user(content, **extra) -> dict:
    return {"id": "u1", "role": "user", "content": content, "createdAt": AT, **extra}


def assistant(parts, id="a1", **extra) -> dict:
    return {"id": id, "role": "assistant", "content": parts, "createdAt": AT, **extra}


def tool(results, id="t1") -> dict:
    return {"id": id, "role": "tool", "content": results, "createdAt": AT}


CALL = {"type": "tool-call", "toolCallId": "c1", "toolName": "add", "args": {"a": 2, "b": 3}}
RESULT = {"type": "tool-result", "toolCallId": "c1", "toolName": "add", "result": {"sum": 5}}


def test_a_user_string_is_one_text_part_with_its_legacy_content():
    stored = to_stored_messages([user("hi", threadId="t", resourceId="r")])
    assert stored == [{"id": "u1", "role": "user", "createdAt": AT,
                       "content": {"format": 2, "parts": [{"type": "text", "text": "hi"}], "content": "hi"}}]
    assert is_stored(stored[0]) and stored_text(stored[0]) == "hi"
    assert to_model_messages(stored) == [{"id": "u1", "role": "user", "content": "hi", "createdAt": AT}]


def test_user_parts_metadata_and_provider_options_round_trip():
    message = user([{"type": "text", "text": "look", "providerOptions": {"x": {"y": 1}}},
                    {"type": "image", "image": "aGk=", "mimeType": "image/png"},
                    {"type": "file", "data": "ZmlsZQ==", "mimeType": "text/plain", "filename": "a.txt"}],
                   metadata={"from": "chat"}, providerOptions={"openai": {"store": False}})
    stored = to_stored_messages([message])[0]
    assert stored["content"] == {"format": 2, "parts": [
        {"type": "text", "text": "look", "providerMetadata": {"x": {"y": 1}}},
        {"type": "file", "data": "aGk=", "mimeType": "image/png"},
        {"type": "file", "data": "ZmlsZQ==", "mimeType": "text/plain", "filename": "a.txt"}],
        "metadata": {"from": "chat"}, "providerMetadata": {"openai": {"store": False}}}
    assert to_model_messages([stored]) == [message]


def test_an_image_without_a_media_type_is_stored_as_any_image_and_comes_back_without_one():
    stored = to_stored_messages([user([{"type": "image", "image": "https://x/cat.png"}])])[0]
    assert stored["content"]["parts"] == [{"type": "file", "data": "https://x/cat.png", "mimeType": "image/*"}]
    assert to_model_messages([stored])[0]["content"] == [{"type": "image", "image": "https://x/cat.png"}]


def test_a_tool_result_joins_the_call_on_the_assistant_message():
    messages = [assistant([{"type": "reasoning", "text": "think"}, {"type": "text", "text": "Let me add."}, CALL]),
                tool([RESULT])]
    stored = to_stored_messages(messages)
    assert stored == [{"id": "a1", "role": "assistant", "createdAt": AT, "content": {"format": 2, "parts": [
        {"type": "reasoning", "reasoning": "think", "details": [{"type": "text", "text": "think"}]},
        {"type": "text", "text": "Let me add."},
        {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "c1", "toolName": "add",
                                                       "args": {"a": 2, "b": 3}, "result": {"sum": 5}}}],
        "content": "Let me add."}}]
    back = to_model_messages(stored)
    assert back == [messages[0], {**tool([RESULT], id="a1-results")}]


def test_an_answers_text_is_also_its_legacy_content_as_mastra_stores_it():
    """Mastra's ``content.content`` on an answer: its text parts, one line apart; none without text."""
    stored = to_stored_messages([
        assistant("Done."),
        assistant([{"type": "text", "text": "First."}, CALL, {"type": "text", "text": "Second."}], id="a2"),
        assistant([{"type": "reasoning", "text": "think"}, CALL], id="a3"),
        assistant([{"type": "text", "text": ""}], id="a4"),
    ])
    assert [m["content"].get("content", None) for m in stored] == ["Done.", "First.\nSecond.", None, None]
    assert [list(m["content"]) for m in stored] == [["format", "parts", "content"]] * 2 + [["format", "parts"]] * 2
    # the model is shown the parts, as before: the legacy text adds nothing to what it sees
    assert to_model_messages(stored[:2]) == [assistant([{"type": "text", "text": "Done."}]),
                                             assistant([{"type": "text", "text": "First."}, CALL,
                                                        {"type": "text", "text": "Second."}], id="a2")]


def test_an_error_result_keeps_is_error_and_a_call_without_result_stays_a_call():
    errored = {**RESULT, "result": {"error": "boom"}, "isError": True}
    stored = to_stored_messages([assistant([CALL]), tool([errored])])[0]
    assert stored["content"]["parts"][0]["toolInvocation"]["isError"] is True
    assert to_model_messages([stored])[1]["content"] == [errored]
    pending = to_stored_messages([assistant([{**CALL, "suspended": {"resumeSchema": None}}])])[0]
    assert pending["content"]["parts"] == [{"type": "tool-invocation", "suspended": {"resumeSchema": None},
                                            "toolInvocation": {"state": "call", "toolCallId": "c1",
                                                               "toolName": "add", "args": {"a": 2, "b": 3}}}]
    assert to_model_messages([pending]) == [assistant([{**CALL, "suspended": {"resumeSchema": None}}])]


def test_a_result_whose_call_was_saved_before_saves_that_call_again_with_it():
    earlier = [user("go"), assistant([CALL])]
    stored = to_stored_messages([tool([RESULT]), assistant([{"type": "text", "text": "5"}], id="a2")],
                                earlier=earlier)
    assert [m["id"] for m in stored] == ["a1", "a2"]  # the call's message again, under its id
    assert stored[0]["content"]["parts"][0]["toolInvocation"]["state"] == "result"


def test_a_result_whose_call_is_nowhere_is_an_assistant_message_of_results():
    stored = to_stored_messages([tool([RESULT], id="t9")])
    assert stored == [{"id": "t9", "role": "assistant", "createdAt": AT, "content": {"format": 2, "parts": [
        {"type": "tool-invocation", "toolInvocation": {"state": "result", "toolCallId": "c1", "toolName": "add",
                                                       "args": None, "result": {"sum": 5}}}]}}]
    # after its call, such a message reads back as the tool message alone
    call = to_stored_messages([assistant([CALL])])
    assert [m["role"] for m in to_model_messages(call + stored)] == ["assistant", "tool"]


def test_a_signal_is_stored_as_its_contents_with_its_metadata_not_its_xml():
    signal = {**create_signal({"type": "notification", "contents": "CI <failed>", "tag_name": "ci",
                               "attributes": {"b": 1, "a": True}, "metadata": {"k": "v"},
                               "provider_options": {"anthropic": {"cache": True}}}), "acceptedAt": AT}
    stored = signal_to_stored(signal)
    assert stored == {"id": signal["id"], "role": "signal", "type": "ci", "createdAt": signal["createdAt"],
                      "content": {"format": 2, "parts": [{"type": "text", "text": "CI <failed>"}],
                                  "metadata": {"signal": {"id": signal["id"], "type": "notification", "tagName": "ci",
                                                          "createdAt": signal["createdAt"], "acceptedAt": AT,
                                                          "attributes": {"b": 1, "a": True},
                                                          "metadata": {"k": "v"}}},
                                  "providerMetadata": {"anthropic": {"cache": True}}}}
    # the model sees what it saw when the signal was accepted
    assert to_model_messages([stored]) == [render_signal(signal)]
    assert to_model_messages([stored])[0]["content"] == '<ci b="1" a="true">CI &lt;failed&gt;</ci>'
    assert stored_to_signal(stored)["contents"] == "CI <failed>"


def test_signal_contents_round_trip_empty_multimodal_and_plain():
    for contents in ("", "plain", [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
                     [{"type": "text", "text": "see"}, {"type": "file", "data": "eA==", "mimeType": "text/plain"}]):
        signal = {**message_to_signal({"contents": contents, "attributes": {"from": "x"}}), "acceptedAt": AT}
        stored = signal_to_stored(signal)
        if contents == "":
            assert stored["content"]["parts"] == [{"type": "text", "text": ""}]
        assert to_model_messages([stored]) == [render_signal(signal)], contents


def test_a_transient_signal_is_never_stored():
    kept = render_signal(message_to_signal("keep"))
    gone = render_signal(create_signal({"type": "reactive", "contents": "x", "transient": True}))
    stored = to_stored_messages([kept, gone])
    assert [m["role"] for m in stored] == ["signal"]


def test_stored_messages_pass_through_and_old_shapes_are_read_as_they_are():
    stored = to_stored_messages([user("hi")])
    assert to_stored_messages(stored) == stored
    old = {"id": "x", "role": "user", "content": "<user a=\"1\">old</user>", "createdAt": AT}
    assert to_model_messages([old]) == [old]


def test_a_signal_read_back_from_jsonb_is_stored_with_its_attributes_in_the_xmls_order():
    signal = {**create_signal({"type": "notification", "contents": "CI failed",
                               "attributes": {"source": "github", "id": "n1", "kind": "ci"}}), "acceptedAt": AT}
    message = render_signal(signal)
    assert message["content"] == '<notification source="github" id="n1" kind="ci">CI failed</notification>'
    # PostgreSQL's jsonb gives the keys back shortest first; the XML keeps the order the model saw
    message["metadata"]["signal"]["attributes"] = {"id": "n1", "kind": "ci", "source": "github"}
    stored = to_stored_messages([message])[0]
    assert list(stored["content"]["metadata"]["signal"]["attributes"]) == ["source", "id", "kind"]
    assert to_model_messages([stored])[0]["content"] == message["content"]


def test_stored_messages_are_copies_the_caller_can_change():
    args = {"a": 2, "nested": {"list": [1, {"b": 3}]}}
    stored = to_stored_messages([assistant([{**CALL, "args": args}])])[0]
    stored["content"]["parts"][0]["toolInvocation"]["args"]["nested"]["list"][1]["b"] = 99
    assert args == {"a": 2, "nested": {"list": [1, {"b": 3}]}}


def test_json_copy_copies_json_data_deeply_and_anything_else_as_deepcopy_does():
    import datetime

    class Point:
        def __init__(self, x):
            self.x = x

    when = datetime.datetime(2026, 1, 2, tzinfo=datetime.timezone.utc)
    value = {"text": "x", "n": 1, "f": 1.5, "ok": True, "none": None, "list": [{"a": [1]}], "when": when,
             "point": Point([1])}
    copied = json_copy(value)
    assert copied["list"] == [{"a": [1]}] and copied["list"] is not value["list"]
    assert copied["list"][0]["a"] is not value["list"][0]["a"]
    assert copied["when"] == when
    assert copied["point"] is not value["point"] and copied["point"].x == [1] and copied["point"].x is not value["point"].x


def test_json_copy_of_a_structure_that_holds_itself():
    looped: dict = {"a": 1}
    looped["self"] = looped
    copied = json_copy(looped)
    assert copied is not looped and copied["self"] is copied and copied["a"] == 1
