"""Tools that misbehave: slow sync tools run off the event loop and time out; results that are not
strict JSON become a tool error the model sees (never a failed write later)."""

import asyncio
import datetime
import decimal
import math
import threading
import time
import uuid

import pytest

from agents.runtime import Agent, AgentConfigError, create_tool
from agents.runtime.testing import ScriptedModel, text_step, tool_step
from agents.runtime.tools import strict_json


async def call_once(tool, args=None):
    model = ScriptedModel([tool_step(("c1", "t", args or {})), text_step("done")])
    agent = Agent(id="a", instructions="x", model=model, tools={"t": tool})
    chunks = []
    result = await agent.generate("go", on_chunk=chunks.append)
    tool_parts = [m for m in model.requests[1].messages if m["role"] == "tool"][-1]["content"]
    return result, chunks, tool_parts


async def test_a_slow_sync_tool_runs_in_a_worker_thread_and_the_loop_keeps_running():
    ticks = []

    async def ticker():
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    task = asyncio.ensure_future(ticker())
    tool = create_tool(id="t", execute=lambda input: time.sleep(0.3) or {"slept": True})
    try:
        result, _, parts = await call_once(tool)
    finally:
        task.cancel()
    assert parts[0]["result"] == {"slept": True}
    assert len(ticks) >= 15  # the loop ticked all along (a blocked loop ticks once or twice)
    assert max(b - a for a, b in zip(ticks, ticks[1:])) < 0.2


def quick_tool(threads: list):
    """A quick tool that notes the thread of each call; ``{"slow": True}`` makes a call take 10 ms."""
    def execute(input):
        threads.append(threading.current_thread().name)
        if input.get("slow"):
            time.sleep(0.01)
        return "ok"

    return create_tool(id="t", execute=execute, quick=True)


async def test_a_quick_sync_tool_runs_on_the_event_loop_until_a_second_call_is_not_quick(caplog):
    """``quick=True``: no thread hand-off. A second call over the limit (2 ms) within 8 calls of the
    first sends the tool's later calls back to the worker thread, with a warning: a misjudged tool
    cannot keep the loop waiting."""
    threads = []
    here = threading.current_thread().name
    tool = quick_tool(threads)
    await call_once(tool)
    assert threads == [here] and tool.quick
    await call_once(tool, {"slow": True})
    assert tool.quick and "marked quick" not in caplog.text  # one slow call: still on the loop
    for _ in range(7):
        await call_once(tool)
    await call_once(tool, {"slow": True})  # the 8th call after the first slow one
    assert threads == [here] * 10
    assert "tool 't' is marked quick but two of its calls took over 2 ms" in caplog.text and not tool.quick
    await call_once(tool)
    assert threads[10] != here


async def test_slow_quick_calls_further_apart_than_the_window_keep_the_tool_on_the_loop(caplog):
    """A slow call now and then (the loop's thread waited for another thread, the kernel ran
    something else) is no fault of the tool's: only two within 8 calls end its quick status."""
    here = threading.current_thread().name
    threads = []
    tool = quick_tool(threads)
    for _ in range(3):
        await call_once(tool, {"slow": True})
        for _ in range(8):
            await call_once(tool)
    assert tool.quick and set(threads) == {here} and len(threads) == 27
    assert "marked quick" not in caplog.text


async def test_a_quick_tool_that_returns_an_awaitable_keeps_its_timeout():
    """A quick sync tool runs with no timer armed (none could fire during it); an awaitable it
    returns is awaited within the tool's timeout all the same."""
    tool = create_tool(id="t", execute=lambda input: asyncio.sleep(5), quick=True, timeout_s=0.1)
    _, _, parts = await call_once(tool)
    assert parts[0]["result"] == {"error": "ToolTimeoutError: tool 't' did not finish within 0.1 s"}


def test_an_async_tool_is_never_quick():
    async def execute(input):
        return "ok"

    assert create_tool(id="t", execute=execute, quick=True).quick is False


@pytest.mark.parametrize("is_async", [False, True])
async def test_a_tool_over_its_timeout_ends_as_a_tool_error(is_async):
    if is_async:
        async def execute(input):
            await asyncio.sleep(5)
    else:
        def execute(input):
            time.sleep(1)
    tool = create_tool(id="t", execute=execute, timeout_s=0.1)
    started = time.monotonic()
    result, chunks, parts = await call_once(tool)
    assert time.monotonic() - started < 0.9
    message = "ToolTimeoutError: tool 't' did not finish within 0.1 s"
    assert [c["payload"]["error"] for c in chunks if c["type"] == "tool-error"] == [message]
    assert parts == [{"type": "tool-result", "toolCallId": "c1", "toolName": "t", "result": {"error": message},
                      "isError": True, "input": {}}]
    assert result.text == "done"


def test_the_default_timeout_is_sixty_seconds_and_a_bad_one_is_refused():
    assert create_tool(id="t", execute=lambda i: 1).timeout_s == 60.0
    for bad in (0, -1, "5", True, 10**6, math.nan):
        with pytest.raises(AgentConfigError) as info:
            create_tool(id="t", execute=lambda i: 1, timeout_s=bad)
        assert "timeout_s" in str(info.value)


@pytest.mark.parametrize("value, problem", [
    (math.inf, "inf is not a JSON number"),
    (-math.inf, "-inf is not a JSON number"),
    (math.nan, "nan is not a JSON number"),
    (complex(0, 1), "a value of type complex (1j)"),
    (10 ** 5000, "an integer with more than 4300 digits"),
    (b"raw", "a value of type bytes (b'raw')"),
    ({1: "x"}, "object key 1 is not a string"),
    (decimal.Decimal("NaN"), "Decimal('NaN') is not a JSON number"),
], ids=["inf", "-inf", "nan", "complex", "huge-int", "bytes", "int-key", "decimal-nan"])
async def test_a_result_that_is_not_strict_json_is_a_tool_error_the_model_sees(value, problem):
    tool = create_tool(id="t", execute=lambda input: {"value": value})
    result, chunks, parts = await call_once(tool)
    message = f"output of tool 't' is not JSON: {problem}"
    assert [c["payload"]["error"] for c in chunks if c["type"] == "tool-error"] == [message]
    assert parts[0]["result"] == {"error": message} and parts[0]["isError"] is True


async def test_dates_uuids_decimals_tuples_and_sets_are_converted():
    stamp = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    ident = uuid.UUID("12345678-1234-5678-1234-567812345678")
    tool = create_tool(id="t", execute=lambda input: {"at": stamp, "day": stamp.date(), "id": ident,
                                                      "price": decimal.Decimal("1.10"), "pair": (1, 2),
                                                      "tags": {"b", "a"}})
    _, _, parts = await call_once(tool)
    assert parts[0]["result"] == {"at": "2026-01-02T03:04:05+00:00", "day": "2026-01-02",
                                  "id": "12345678-1234-5678-1234-567812345678", "price": "1.10",
                                  "pair": [1, 2], "tags": ["a", "b"]}


def test_strict_json_keeps_plain_json_as_it_is():
    data = {"a": [1, 2.5, "x", None, True, {"b": False}]}
    assert strict_json(data) == data
