"""Scorers: code and LLM-judged scorers, is_task_complete (strategies, parallel, timeout,
on_complete, feedback), scorers on results with seeded sampling, return_scorer_data."""

import asyncio
import random
import re

import pytest

from agents.runtime import Agent, AgentConfigError
from agents.runtime.scoring import (ScorerError, create_llm_scorer, create_scorer, scoring_drain,
                                    set_sampling_random)
from agents.runtime.testing import ScriptedModel, text_step


def output_text(run):
    """The scored output: a text (completion checks) or the response messages (live scorers)."""
    output = run["output"]
    if isinstance(output, str):
        return output
    return " ".join(p["text"] for m in output for p in m["content"] if p.get("type") == "text")


def has(word, id=None):
    return create_scorer(id=id or f"has-{word}", name=f"Has {word}",
                         generate_score=lambda ctx: 1 if word in output_text(ctx["run"]) else 0,
                         generate_reason=lambda ctx: f"{word} {'found' if ctx['score'] else 'missing'}")


def slow(seconds, score=1):
    async def generate_score(ctx):
        await asyncio.sleep(seconds)
        return score
    return create_scorer(id=f"slow-{seconds}", generate_score=generate_score)


def no_duration(text):
    return re.sub(r"Duration: \d+ms", "Duration: Nms", text)


@pytest.fixture
def seeded():
    previous = set_sampling_random(random.Random(7))
    yield
    set_sampling_random(previous)


# -- scorers -----------------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_a_code_scorer_runs_its_steps_in_order():
    scorer = create_scorer(id="len", preprocess=lambda ctx: ctx["run"]["output"].split(),
                           analyze=lambda ctx: len(ctx["results"]["preprocess_step_result"]),
                           generate_score=lambda ctx: min(1, ctx["results"]["analyze_step_result"] / 4),
                           generate_reason=lambda ctx: f"{ctx['results']['analyze_step_result']} words")
    assert await scorer.run({"input": None, "output": "one two"}) == {
        "score": 0.5, "reason": "2 words", "preprocess_step_result": ["one", "two"], "analyze_step_result": 2}


@pytest.mark.asyncio
async def test_a_scorer_that_returns_no_number_or_raises_names_the_step():
    with pytest.raises(ScorerError) as info:
        await create_scorer(id="bad", generate_score=lambda ctx: "high").run({"output": ""})
    assert info.value.message == "scorer 'bad': generate_score returned 'high', not a number"
    with pytest.raises(ScorerError) as info:
        await create_scorer(id="boom", analyze=lambda ctx: 1 / 0, generate_score=lambda ctx: 1).run({"output": ""})
    assert info.value.message == "scorer 'boom' failed in analyze: ZeroDivisionError: division by zero"


@pytest.mark.asyncio
async def test_an_llm_scorer_asks_its_judge_agent_for_a_structured_verdict():
    judge_model = ScriptedModel([text_step('{"score": 0.8, "reason": "mostly polite"}')])
    judge = Agent(id="judge", instructions="You judge.", model=judge_model)
    scorer = create_llm_scorer(id="polite", judge=judge, instructions="Rate politeness from 0 to 1.",
                               prompt=lambda run: f"Rate: {run['output']}")
    assert await scorer.run({"input": "hi", "output": "Hello dear"}) == {
        "score": 0.8, "reason": "mostly polite", "analyze_step_result": {"score": 0.8, "reason": "mostly polite"}}
    request = judge_model.requests[0]
    assert request.messages == [{"role": "system", "content": "Rate politeness from 0 to 1."},
                                {"role": "user", "content": "Rate: Hello dear"}]
    assert request.response_format["schema"]["required"] == ["score", "reason"]


# -- is_task_complete --------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_not_complete_gives_feedback_and_the_run_goes_on_until_complete():
    chunks, results = [], []
    model = ScriptedModel([text_step("a draft"), text_step("the final answer")])
    result = await Agent(id="a", instructions="x", model=model).generate("write", on_chunk=chunks.append, is_task_complete={
        "scorers": [has("final")], "onComplete": results.append})
    assert result.text == "the final answer"
    assert [r["complete"] for r in results] == [False, True]
    feedback = model.requests[1].messages[-1]
    assert (feedback["role"], feedback["type"]) == ("assistant", "completion-feedback")
    assert no_duration(feedback["content"][0]["text"]) == (
        "#### Completion Check Results\n\nOverall: ❌ NOT COMPLETE\nDuration: Nms\n\n**Has final** (has-final)\n"
        "Score: 0 ❌\nReason: final missing\n\n🔄 The task is not yet complete. Please continue working based on "
        "the feedback above.")
    checks = [c["payload"] for c in chunks if c["type"] == "is-task-complete"]
    assert [(c["iteration"], c["passed"], c["maxIterationReached"], c["reason"]) for c in checks] == [
        (1, False, False, "final missing"), (2, True, False, "final found")]
    assert checks[0]["results"][0] | {"duration": 0} == {"scorerId": "has-final", "scorerName": "Has final", "score": 0,
                                                        "passed": False, "reason": "final missing", "duration": 0}


@pytest.mark.asyncio
async def test_strategy_any_needs_one_scorer_and_all_needs_every_one():
    model = ScriptedModel([text_step("apple"), text_step("apple")])
    agent = Agent(id="a", instructions="x", model=model)
    anyone = await agent.generate("x", max_steps=1, is_task_complete={"scorers": [has("pear"), has("apple")],
                                                                      "strategy": "any"})
    seen = []
    every = await agent.generate("x", max_steps=1, is_task_complete={
        "scorers": [has("pear"), has("apple")], "strategy": "all", "on_complete": seen.append})
    assert anyone.finish_reason == every.finish_reason == "stop"
    assert seen[0]["complete"] is False
    assert [s["passed"] for s in seen[0]["scorers"]] == [False, True]


@pytest.mark.asyncio
async def test_sequential_scoring_stops_at_the_first_failure_with_all():
    seen = []
    await Agent(id="a", instructions="x", model=ScriptedModel([text_step("apple")])).generate(
        "x", max_steps=1, is_task_complete={"scorers": [has("pear"), has("apple")], "parallel": False,
                                            "on_complete": seen.append})
    assert [s["scorer_id"] for s in seen[0]["scorers"]] == ["has-pear"]


@pytest.mark.asyncio
async def test_a_scorer_past_the_timeout_counts_as_failed_and_the_run_does_not_hang():
    seen = []
    model = ScriptedModel([text_step("done")])
    result = await asyncio.wait_for(Agent(id="a", instructions="x", model=model).generate(
        "x", max_steps=1, is_task_complete={"scorers": [slow(30), has("done")], "timeout": 50,
                                            "on_complete": seen.append}), 5)
    assert result.text == "done"
    assert seen[0]["timed_out"] is True
    assert seen[0]["complete"] is False
    assert [(s["scorer_id"], s["passed"], s.get("errored"), s["reason"]) for s in seen[0]["scorers"]] == [
        ("slow-30", False, True, "Scorer did not finish before the completion timeout"),
        ("has-done", True, None, "done found")]


@pytest.mark.asyncio
async def test_parallel_scorers_run_together():
    seen = []
    other_started = asyncio.Event()

    async def waits_for_the_other(ctx):
        await other_started.wait()  # only ever set when both run at once
        return 1

    def starts(ctx):
        other_started.set()
        return 1

    scorers = [create_scorer(id="first", generate_score=waits_for_the_other),
               create_scorer(id="second", generate_score=starts)]
    await asyncio.wait_for(Agent(id="a", instructions="x", model=ScriptedModel([text_step("x")])).generate(
        "x", max_steps=1, is_task_complete={"scorers": scorers, "timeout": 5000, "on_complete": seen.append}), 10)
    assert (seen[0]["complete"], seen[0]["timed_out"]) == (True, False)


@pytest.mark.asyncio
async def test_a_raising_scorer_is_a_failed_check_with_its_reason():
    seen = []
    boom = create_scorer(id="boom", generate_score=lambda ctx: 1 / 0)
    await Agent(id="a", instructions="x", model=ScriptedModel([text_step("x")])).generate(
        "x", max_steps=1, is_task_complete={"scorers": [boom], "on_complete": seen.append})
    assert seen[0]["scorers"][0]["reason"] == (
        "Scorer threw an error: scorer 'boom' failed in generate_score: ZeroDivisionError: division by zero")


@pytest.mark.asyncio
async def test_the_last_step_says_max_iterations_reached():
    model = ScriptedModel([text_step("a"), text_step("b")])
    result = await Agent(id="a", instructions="x", model=model).generate(
        "x", max_steps=2, is_task_complete={"scorers": [has("zzz")]})
    assert model.calls == 2
    assert result.messages[-1]["content"][0]["text"].endswith("⚠️ Max iterations reached.")


@pytest.mark.asyncio
@pytest.mark.parametrize("value, field", [
    ({}, "options.is_task_complete.scorers"), ({"scorers": [print]}, "options.is_task_complete.scorers"),
    ({"scorers": [has("a")], "strategy": "most"}, "options.is_task_complete.strategy"),
    ({"scorers": [has("a")], "timeout": 0}, "options.is_task_complete.timeout"),
    ({"scorers": [has("a")], "bogus": 1}, "options.is_task_complete.bogus"),
])
async def test_a_bad_is_task_complete_is_rejected(value, field):
    with pytest.raises(AgentConfigError) as info:
        await Agent(id="a", instructions="x", model=ScriptedModel([])).generate("x", is_task_complete=value)
    assert info.value.field == field


# -- scorers on results ------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_agent_scorers_score_each_run_in_the_background_and_the_scores_are_stored(run_store):
    agent = Agent(id="a", instructions="x", model=ScriptedModel([text_step("final words")]),
                  scorers={"final": has("final")})
    result = await agent.generate("go")
    assert await scoring_drain()
    assert [(s["scorer_key"], s["scorer_id"], s["run_id"], s["agent_id"], s["score"], s["reason"], s["error"])
            for s in run_store.scores] == [("final", "has-final", result.run_id, "a", 1, "final found", None)]


@pytest.mark.asyncio
async def test_ratio_sampling_is_reproducible_with_a_seeded_source(run_store, seeded):
    draws = random.Random(7)
    expected = [draws.random() < 0.5 for _ in range(6)]
    agent = Agent(id="a", instructions="x", model=ScriptedModel([text_step("w")] * 6),
                  scorers={"w": {"scorer": has("w"), "sampling": {"type": "ratio", "rate": 0.5}}})
    runs = [(await agent.generate("go")).run_id for _ in range(6)]
    await scoring_drain()
    assert [s["run_id"] for s in run_store.scores] == [r for r, keep in zip(runs, expected) if keep]
    assert expected == [True, True, False, True, False, True]


@pytest.mark.asyncio
async def test_call_scorers_replace_the_agents_and_may_name_them(run_store):
    agent = Agent(id="a", instructions="x", model=ScriptedModel([text_step("w"), text_step("w")]),
                  scorers={"w": has("w"), "z": has("z")})
    await agent.generate("go", scorers={"only": {"scorer": "has-z"}})
    await agent.generate("go", scorers={"none": {"scorer": has("w"), "sampling": {"type": "ratio", "rate": 0}}})
    await scoring_drain()
    assert [(s["scorer_key"], s["score"]) for s in run_store.scores] == [("only", 0)]
    with pytest.raises(AgentConfigError) as info:
        await agent.generate("go", scorers={"x": {"scorer": "nope"}})
    assert (info.value.field, info.value.problem) == ("options.scorers.x.scorer", "unknown scorer 'nope'")


@pytest.mark.asyncio
async def test_a_failing_scorer_is_stored_with_its_error(run_store):
    boom = create_scorer(id="boom", generate_score=lambda ctx: 1 / 0)
    await Agent(id="a", instructions="x", model=ScriptedModel([text_step("w")]), scorers={"b": boom}).generate("go")
    await scoring_drain()
    assert [(s["score"], s["error"]) for s in run_store.scores] == [
        (None, "scorer 'boom' failed in generate_score: ZeroDivisionError: division by zero")]


@pytest.mark.asyncio
async def test_dynamic_scorers_come_from_the_request_context(run_store):
    async def scorers(rc):
        return {"w": has("w")} if rc.get("eval") else {}

    agent = Agent(id="a", instructions="x", model=ScriptedModel([text_step("w"), text_step("w")]), scorers=scorers)
    await agent.generate("go")
    await agent.generate("go", request_context={"eval": True})
    await scoring_drain()
    assert len(run_store.scores) == 1


@pytest.mark.asyncio
async def test_return_scorer_data_puts_what_is_scored_in_the_result():
    result = await Agent(id="a", instructions="Be kind.", model=ScriptedModel([text_step("w")])).generate(
        "go", return_scorer_data=True)
    assert result.scoring_data["input"]["system_messages"] == [{"role": "system", "content": "Be kind."}]
    assert [m["content"] for m in result.scoring_data["input"]["input_messages"]] == ["go"]
    assert result.scoring_data["output"][0]["content"] == [{"type": "text", "text": "w"}]
    assert set(result.to_dict()["scoringData"]["input"]) == {"inputMessages", "rememberedMessages", "systemMessages"}
    plain = await Agent(id="a", instructions="x", model=ScriptedModel([text_step("w")])).generate("go")
    assert plain.scoring_data is None and "scoringData" not in plain.to_dict()


@pytest.mark.asyncio
async def test_suppressed_feedback_reaches_the_model_but_not_the_messages():
    model = ScriptedModel([text_step("draft"), text_step("final")])
    result = await Agent(id="a", instructions="x", model=model).generate(
        "write", is_task_complete={"scorers": [has("final")], "suppress_feedback": True})
    assert model.requests[1].messages[-1]["type"] == "completion-feedback"
    assert [m.get("type") for m in result.messages] == [None, None, None]
    assert result.text == "final"
