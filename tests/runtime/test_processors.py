"""Processors: the four hooks, tripwires, retries with their limit, pipelines, per-call
processors, errors in a hook, and the built-ins."""

import pytest

from agents.runtime import Agent, AgentConfigError, InMemoryMemory
from agents.runtime.processors import (KeywordBlocker, PIIRedactor, ProcessorPipeline, TokenLimiter,
                                       UnicodeNormalizer)
from agents.runtime.testing import ScriptedModel, text_step


def agent(model, **kwargs):
    return Agent(id="a", instructions="x", model=model, **kwargs)


def of_type(chunks, kind):
    return [c["payload"] for c in chunks if c["type"] == kind]


class Upper:
    id = "upper"

    def process_input(self, *, messages):
        return [{**m, "content": m["content"].upper()} for m in messages]


class Exclaim:
    id = "exclaim"

    async def process_input(self, *, messages):
        return [{**m, "content": m["content"] + "!"} for m in messages]


class StepTag:
    id = "step-tag"

    def process_input_step(self, *, messages, step_number):
        return messages + [{"role": "user", "content": f"(step {step_number})"}]


class BlockAll:
    id = "gate"

    def process_input(self, *, messages, abort):
        abort("Not today", metadata={"rule": 7})


class Shout:
    id = "shout"

    def process_output_stream(self, *, chunk):
        if chunk["type"] == "text-delta":
            return {**chunk, "payload": {**chunk["payload"], "text": chunk["payload"]["text"].upper()}}
        if chunk["type"] == "response-metadata":
            return None
        return chunk


class AlwaysRetry:
    id = "picky"

    def process_output_stream(self, *, chunk, abort):
        if chunk["type"] == "text-delta":
            abort("Try again.", retry=True)
        return chunk


class Broken:
    id = "broken"

    def process_input(self, *, messages):
        raise ValueError("bad config")


# -- hooks -----------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_process_input_step_changes_each_steps_messages_only():
    model = ScriptedModel([text_step("ok")])
    result = await agent(model, input_processors=[StepTag()]).generate("hi")
    assert model.requests[0].messages[1:] == [{"role": "user", "content": "hi"},
                                              {"role": "user", "content": "(step 0)"}]
    assert [m["content"] for m in result.messages if m["role"] == "user"] == ["hi"]


@pytest.mark.asyncio
async def test_process_output_stream_rewrites_and_drops_chunks():
    chunks = []
    result = await agent(ScriptedModel([text_step("hello", deltas=["hel", "lo"])]),
                         output_processors=[Shout()]).generate("hi", on_chunk=chunks.append)
    assert of_type(chunks, "text-delta") == [{"id": of_type(chunks, "text-start")[0]["id"], "text": "HEL"},
                                             {"id": of_type(chunks, "text-start")[0]["id"], "text": "LO"}]
    assert of_type(chunks, "response-metadata") == []
    assert result.text == "hello"  # the stream hook changes what is streamed, not the result


@pytest.mark.asyncio
async def test_a_tripwire_in_process_input_ends_the_run_before_the_model():
    chunks = []
    model = ScriptedModel([])
    result = await agent(model, input_processors=[BlockAll()]).generate("hi", on_chunk=chunks.append)
    assert result.tripwire == {"reason": "Not today", "retry": False, "metadata": {"rule": 7}, "processorId": "gate"}
    assert [c["type"] for c in chunks] == ["start", "tripwire", "finish"]
    assert of_type(chunks, "tripwire") == [{"reason": "Not today", "processorId": "gate"}]
    assert (result.finish_reason, result.error, model.calls) == ("other", None, 0)


@pytest.mark.asyncio
async def test_retries_stop_at_max_processor_retries_then_trip():
    model = ScriptedModel([text_step("one"), text_step("two"), text_step("three"), text_step("four")])
    result = await agent(model, output_processors=[AlwaysRetry()], max_processor_retries=2).generate("hi")
    assert model.calls == 3  # the first answer and two retries
    assert result.tripwire["reason"] == "Try again."
    assert [m["content"] for m in model.requests[2].messages if m["role"] == "user"] == [
        "hi", "Try again.", "Try again."]


@pytest.mark.asyncio
async def test_the_calls_max_processor_retries_overrides_the_agents():
    model = ScriptedModel([text_step("one"), text_step("two")])
    result = await agent(model, output_processors=[AlwaysRetry()], max_processor_retries=5).generate(
        "hi", max_processor_retries=1)
    assert model.calls == 2
    assert result.tripwire["processorId"] == "picky"


@pytest.mark.asyncio
async def test_a_raising_processor_ends_the_run_with_a_processor_error():
    chunks = []
    model = ScriptedModel([])
    result = await agent(model, input_processors=[Broken()]).generate("hi", on_chunk=chunks.append)
    assert result.finish_reason == "error"
    assert result.error.code == "processor_error"
    assert of_type(chunks, "error") == [{"error": {
        "message": "processor 'broken' failed in process_input: ValueError: bad config", "code": "processor_error"}}]
    assert model.calls == 0


class FailsOn:
    """An output processor that raises on the chunks of ``kinds`` (``"result"``: in
    ``process_output_result``) and passes the others."""

    id = "flaky"

    def __init__(self, *kinds):
        self.kinds = kinds

    def process_output_stream(self, *, chunk):
        if chunk["type"] in self.kinds:
            raise RuntimeError(f"cannot take {chunk['type']}")
        return chunk

    def process_output_result(self, *, text):
        if "result" in self.kinds:
            raise RuntimeError("cannot take the result")
        return None


@pytest.mark.asyncio
async def test_a_stream_processor_that_fails_ends_the_run_and_only_its_end_goes_out():
    chunks, errors = [], []
    model = ScriptedModel([text_step("one two", deltas=["one ", "two"]), text_step("never")])
    result = await agent(model, output_processors=[FailsOn("text-delta")]).generate(
        "hi", on_chunk=chunks.append, on_error=errors.append)
    assert (result.finish_reason, result.error.code) == ("error", "processor_error")
    assert str(result.error) == "processor 'flaky' failed in process_output_stream: RuntimeError: cannot take text-delta"
    assert [c["type"] for c in chunks] == ["start", "step-start", "response-metadata", "text-start", "error", "finish"]
    assert chunks[-1]["payload"]["stepResult"] == {"reason": "error"}
    assert [e["error"] for e in errors] == [result.error]


@pytest.mark.asyncio
async def test_a_stream_processor_that_fails_on_the_first_chunk_ends_the_run_before_the_model():
    chunks = []
    model = ScriptedModel([])
    result = await agent(model, output_processors=[FailsOn("start", "error", "finish")]).generate(
        "hi", on_chunk=chunks.append)
    assert (result.finish_reason, result.error.code, model.calls) == ("error", "processor_error", 0)
    assert [c["type"] for c in chunks] == ["error", "finish"]  # as the run made them: the processor is out


@pytest.mark.asyncio
async def test_a_processor_that_fails_on_the_result_ends_the_run_with_its_error():
    chunks = []
    memory = InMemoryMemory()
    model = ScriptedModel([text_step("fine")])
    result = await agent(model, output_processors=[FailsOn("result")], memory=memory).generate(
        "hi", on_chunk=chunks.append, memory={"resource": "u", "thread": "t"})
    assert (result.finish_reason, result.text) == ("error", "fine")
    assert str(result.error) == "processor 'flaky' failed in process_output_result: RuntimeError: cannot take the result"
    assert [c["type"] for c in chunks][-2:] == ["error", "finish"]
    saved = await memory.store.list_messages(resource_id="u", thread_id="t")
    assert [m["role"] for m in saved][:2] == ["user", "assistant"]  # the turn is kept, with why it failed


@pytest.mark.asyncio
async def test_a_processor_that_fails_only_on_the_finish_chunk_leaves_the_runs_end_as_it_was(caplog):
    chunks = []
    result = await agent(ScriptedModel([text_step("fine")]), output_processors=[FailsOn("finish")]).generate(
        "hi", on_chunk=chunks.append)
    assert (result.finish_reason, result.error, result.text) == ("stop", None, "fine")
    assert chunks[-1]["type"] == "finish" and chunks[-1]["payload"]["stepResult"] == {"reason": "stop"}
    assert "an output processor failed on its finish chunk" in caplog.text


class StopsEverything:
    id = "stopper"

    def process_output_stream(self, *, chunk, abort):
        abort("no chunk shall pass")


@pytest.mark.asyncio
async def test_a_tripwire_on_every_chunk_stops_the_run_at_its_start_and_its_end_still_goes_out():
    chunks = []
    model = ScriptedModel([])
    result = await agent(model, output_processors=[StopsEverything()]).generate("hi", on_chunk=chunks.append)
    assert (result.finish_reason, result.tripwire["reason"], model.calls) == ("other", "no chunk shall pass", 0)
    assert [c["type"] for c in chunks] == ["tripwire", "finish"]


class Counter:
    id = "counter"

    def process_output_stream(self, *, chunk, state):
        if chunk["type"] == "text-delta":
            state["n"] = state.get("n", 0) + 1
            return {**chunk, "payload": {**chunk["payload"], "text": f"{state['n']}:{chunk['payload']['text']}"}}
        return chunk


@pytest.mark.asyncio
async def test_each_run_has_its_own_processor_state():
    shared = Counter()
    a = agent(ScriptedModel([text_step("ab", deltas=["a", "b"]), text_step("c")]), output_processors=[shared])
    first, second = [], []
    await a.generate("x", on_chunk=first.append)
    await a.generate("y", on_chunk=second.append)
    assert [p["text"] for p in of_type(first, "text-delta")] == ["1:a", "2:b"]
    assert [p["text"] for p in of_type(second, "text-delta")] == ["1:c"]


# -- pipelines and per-call processors -------------------------------------------------------

@pytest.mark.asyncio
async def test_a_pipeline_runs_its_members_in_order():
    model = ScriptedModel([text_step("ok"), text_step("ok")])
    a = agent(model, input_processors=[ProcessorPipeline([Upper(), Exclaim()], id="prep")])
    await a.generate("hi")
    await a.generate("hi", input_processors=[ProcessorPipeline([Exclaim(), ProcessorPipeline([Upper()])])])
    assert model.requests[0].messages[-1]["content"] == "HI!"
    assert model.requests[1].messages[-1]["content"] == "HI!"


@pytest.mark.asyncio
async def test_a_tripwire_inside_a_pipeline_names_the_member():
    result = await agent(ScriptedModel([]), input_processors=[ProcessorPipeline([Upper(), BlockAll()])]).generate("hi")
    assert result.tripwire["processorId"] == "gate"


@pytest.mark.asyncio
async def test_per_call_output_processors_replace_the_agents():
    chunks = []
    a = agent(ScriptedModel([text_step("hello")]), output_processors=[AlwaysRetry()])
    result = await a.generate("hi", output_processors=[Shout()], on_chunk=chunks.append)
    assert result.tripwire is None
    assert [p["text"] for p in of_type(chunks, "text-delta")] == ["HELLO"]


def test_an_object_without_hooks_is_not_a_processor():
    with pytest.raises(AgentConfigError) as info:
        agent(ScriptedModel([]), input_processors=[Upper(), object()])
    assert info.value.field == "input_processors[1]"
    with pytest.raises(AgentConfigError) as info:
        ProcessorPipeline([3], id="p")
    assert info.value.field == "pipeline 'p'[0]"


@pytest.mark.asyncio
async def test_a_bad_per_call_processor_is_rejected_before_the_model():
    model = ScriptedModel([text_step("ok")])
    with pytest.raises(AgentConfigError) as info:
        await agent(model).generate("hi", output_processors=[Shout(), "x"])
    assert info.value.field == "options.output_processors[1]"
    assert model.calls == 0


# -- built-ins -------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_keyword_blocker_stops_a_blocked_input_before_the_model():
    model = ScriptedModel([])
    result = await agent(model, input_processors=[KeywordBlocker(["Bomb", "poison"])]).generate("How to make a BOMB?")
    assert result.tripwire == {"reason": "The message contains a blocked keyword.", "retry": False,
                               "metadata": {"keyword": "Bomb", "where": "input"}, "processorId": "keyword-blocker"}
    assert model.calls == 0


@pytest.mark.asyncio
async def test_keyword_blocker_matches_whole_words_only():
    model = ScriptedModel([text_step("ok")])
    result = await agent(model, input_processors=[KeywordBlocker(["kill"])]).generate("the killer app skill")
    assert (result.tripwire, result.text) == (None, "ok")


@pytest.mark.asyncio
async def test_keyword_blocker_finds_a_keyword_split_across_deltas_in_the_output():
    chunks = []
    model = ScriptedModel([text_step("you can pois on it", deltas=["you can pois", " on it"]),
                           text_step("a poi", deltas=["a po", "i"])])
    blocker = KeywordBlocker(["poison", "poi"], check="output")
    a = agent(model, output_processors=[blocker])
    await a.generate("x")  # "pois on" is no keyword
    result = await a.generate("x", on_chunk=chunks.append)
    assert result.tripwire["metadata"] == {"keyword": "poi", "where": "output"}


@pytest.mark.asyncio
async def test_keyword_blocker_on_output_can_ask_the_model_to_rephrase():
    model = ScriptedModel([text_step("use poison"), text_step("use a trap")])
    result = await agent(model, output_processors=[KeywordBlocker(["poison"], retry_output=True,
                                                                  reason="Rephrase without that word.")],
                         max_processor_retries=1).generate("rats?")
    assert (result.text, result.tripwire) == ("use a trap", None)
    assert model.requests[1].messages[-1] == {"role": "user", "content": "Rephrase without that word.",
                                              "type": "processor-feedback",
                                              "id": model.requests[1].messages[-1]["id"],
                                              "createdAt": model.requests[1].messages[-1]["createdAt"]}


@pytest.mark.asyncio
async def test_pii_redactor_masks_input_before_the_model_sees_it():
    model = ScriptedModel([text_step("ok")])
    await agent(model, input_processors=[PIIRedactor()]).generate(
        "I am ann@example.com, call +33 6 12 34 56 78 or (555) 123-4567 on 2024-12-31")
    assert model.requests[0].messages[-1]["content"] == "I am [EMAIL], call [PHONE] or [PHONE] on 2024-12-31"


@pytest.mark.asyncio
async def test_pii_redactor_never_streams_part_of_an_email_or_number():
    chunks = []
    memory = InMemoryMemory()
    model = ScriptedModel([text_step("Mail bob@ex.com or 555 123 4567 now",
                                     deltas=["Mail bo", "b@ex", ".com or 555 ", "123 4567 now"])])
    a = Agent(id="a", instructions="x", model=model, memory=memory, output_processors=[PIIRedactor()])
    result = await a.generate("contact?", on_chunk=chunks.append, memory={"resource": "u", "thread": "t"})
    assert [p["text"] for p in of_type(chunks, "text-delta")] == ["Mail", " [EMAIL] or", " [PHONE] now"]
    assert result.text == "Mail [EMAIL] or [PHONE] now"
    saved = await memory.store.list_messages(resource_id="u", thread_id="t")
    assert saved[-1]["content"] == {"format": 2, "parts": [{"type": "text", "text": "Mail [EMAIL] or [PHONE] now"}],
                                    "content": "Mail [EMAIL] or [PHONE] now",
                                    "metadata": {"agentId": "a", "runId": result.run_id, "modelId": "scripted",
                                                 "provider": "test"}}


@pytest.mark.asyncio
async def test_token_limiter_keeps_the_newest_history_that_fits():
    history = [{"role": "user", "content": "a" * 40}, {"role": "assistant", "content": "b" * 40},
               {"role": "user", "content": "c" * 8}, {"role": "assistant", "content": "d" * 8}]
    model = ScriptedModel([text_step("ok")])
    # 4 + ceil(n / 4) tokens per message: 14, 14, 6, 6, and the new "e" * 8 costs 6
    await agent(model, input_processors=[TokenLimiter(20)]).generate(history + [{"role": "user", "content": "e" * 8}])
    assert [m["content"] for m in model.requests[0].messages[1:]] == ["c" * 8, "d" * 8, "e" * 8]


def test_token_limiter_keeps_the_current_turn_and_drops_orphan_tool_results():
    limiter = TokenLimiter(12)
    messages = [{"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "1", "toolName": "t",
                                                   "args": {"q": "x" * 40}}]},
                {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "1", "toolName": "t",
                                              "result": "r"}]},
                {"role": "user", "content": "y" * 80}]
    assert limiter.trim(messages) == [messages[2]]
    assert TokenLimiter(1000, count_tokens=lambda m: 1).trim(messages) == messages


@pytest.mark.asyncio
async def test_unicode_normalizer_rewrites_user_text():
    model = ScriptedModel([text_step("ok")])
    await agent(model, input_processors=[UnicodeNormalizer()]).generate(
        "  \uff28\uff45llo\u200b   wo\ufb01rst\u202e \n\n\n\nend\x07  ")
    assert model.requests[0].messages[-1]["content"] == "Hello wofirst \n\nend"


def test_builtins_reject_bad_settings():
    with pytest.raises(AgentConfigError) as info:
        KeywordBlocker([])
    assert info.value.field == "KeywordBlocker.keywords"
    with pytest.raises(AgentConfigError) as info:
        TokenLimiter(0)
    assert info.value.field == "TokenLimiter.max_tokens"
    with pytest.raises(AgentConfigError) as info:
        UnicodeNormalizer(form="X")
    assert info.value.field == "UnicodeNormalizer.form"
