"""Stored messages as the AI SDK's UIMessage (``response.uiMessages``), part by part, as Mastra's
``AIV5Adapter.toUIMessage`` gives them."""

import pytest

from agents.runtime import Agent
from agents.runtime.testing import ScriptedModel, text_step
from agents.runtime.ui_messages import ui_message

CREATED = "2026-12-07T01:00:00+00:00"


def stored(*parts, **content):
    return {"id": "m1", "role": "assistant", "createdAt": CREATED, "content": {"format": 2, "parts": list(parts),
                                                                               **content}}


def test_metadata_holds_the_stored_metadata_the_time_and_the_thread():
    message = {**stored({"type": "text", "text": "hi"}, metadata={"agentId": "a", "runId": "r"},
                        providerMetadata={"openai": {"id": 1}}), "threadId": "t", "resourceId": "ann"}
    assert ui_message(message) == {"id": "m1", "role": "assistant", "metadata": {
        "agentId": "a", "runId": "r", "createdAt": CREATED, "threadId": "t", "resourceId": "ann",
        "providerMetadata": {"openai": {"id": 1}}}, "parts": [{"type": "text", "text": "hi"}]}


def test_a_call_without_its_result_is_input_available():
    part = {"type": "tool-invocation", "toolInvocation": {"state": "call", "toolCallId": "c1", "toolName": "search",
                                                          "args": {"q": "x"}},
            "providerMetadata": {"mastra": {"k": 1}}, "providerExecuted": True}
    assert ui_message(stored(part))["parts"] == [{"type": "tool-search", "toolCallId": "c1", "input": {"q": "x"},
                                                   "state": "input-available",
                                                   "callProviderMetadata": {"mastra": {"k": 1}},
                                                   "providerExecuted": True}]


def test_reasoning_is_done_and_read_from_its_details_when_it_has_no_text():
    parts = ui_message(stored({"type": "reasoning", "reasoning": "", "details": [{"type": "text", "text": "so"},
                                                                               {"type": "redacted", "data": "x"}]},
                              {"type": "reasoning", "reasoning": "", "details": []}))["parts"]
    assert parts == [{"type": "reasoning", "text": "so", "state": "done"}]  # an empty one is left out


def test_files_are_urls_and_base64_data_becomes_a_data_url():
    parts = ui_message(stored({"type": "file", "data": "aGk=", "mimeType": "text/plain", "filename": "a.txt"},
                              {"type": "file", "data": "https://example.com/c.png", "mimeType": "image/png"},
                              {"type": "file", "data": "data:image/gif;base64,R0l=", "mimeType": "image/gif"}))["parts"]
    assert parts == [
        {"type": "file", "url": "data:text/plain;base64,aGk=", "mediaType": "text/plain", "filename": "a.txt"},
        {"type": "file", "url": "https://example.com/c.png", "mediaType": "image/png"},
        {"type": "file", "url": "data:image/gif;base64,R0l=", "mediaType": "image/gif"},
    ]


def test_sources_step_starts_and_unknown_parts():
    parts = ui_message(stored({"type": "source", "source": {"id": "s1", "url": "https://e.com", "title": "E"}},
                              {"type": "step-start"}, {"type": "data-progress", "data": {"pct": 5}}))["parts"]
    assert parts == [{"type": "source-url", "url": "https://e.com", "sourceId": "s1", "title": "E"},
                     {"type": "step-start"}, {"type": "data-progress", "data": {"pct": 5}}]


def test_a_message_stored_with_its_text_only_gets_a_text_part():
    message = {"id": "u1", "role": "user", "createdAt": CREATED,
               "content": {"format": 2, "parts": [], "content": "hello"}}
    assert ui_message(message)["parts"] == [{"type": "text", "text": "hello"}]
    with_text = {**message, "content": {"format": 2, "parts": [{"type": "text", "text": "hello"}], "content": "hello"}}
    assert ui_message(with_text)["parts"] == [{"type": "text", "text": "hello"}]  # not twice


@pytest.mark.asyncio
async def test_a_reasoning_answer_shows_its_reasoning_before_its_text():
    model = ScriptedModel([text_step("42", reasoning=["think", "ing"])])
    result = await Agent(id="a", instructions="x", model=model).generate("?")
    assert result.ui_messages[0]["parts"] == [{"type": "reasoning", "text": "thinking", "state": "done"},
                                              {"type": "text", "text": "42"}]
