"""``agents.json_text``: JSON text from an encoder built once is the text ``json`` gives, to the
character, for every kind of value a run stores or streams; a value ``json`` refuses is refused
with the same error, a structure that holds itself included; one encoder serves many threads."""

from __future__ import annotations

import json
import threading
from datetime import datetime, timezone
from decimal import Decimal
from enum import Enum, IntEnum

import pytest

from agents.json_text import dumps, dumps_compact, text_encoder


class Colour(Enum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


class Label(str):
    pass


VALUES = [
    None, True, False, 0, -1, 2**70, 0.1, 1e100, -0.0, float("nan"), float("inf"), float("-inf"), "",
    "plain", "quote \" backslash \\ newline \n tab \t", "é ü 中文 😀 \u2028", Label("label"),
    [], {}, (1, 2), [1, [2, [3, {"a": None}]]],
    {"agent_id": "bench", "usage": {"input_tokens": 6, "output_tokens": 3}, "tags": ["x", "y"]},
    {1: "int key", 2.5: "float key", True: "bool key", None: "none key"},
    {"level": Level.HIGH}, [Level.HIGH, Label("x")],
]
LENIENT = [datetime(2026, 12, 5, 19, 22, 33, 149099, tzinfo=timezone.utc), Decimal("1.50"), {1, 2} - {1, 2},
           Colour.RED, {"at": datetime(2026, 1, 1), "cost": Decimal("0.0001")}, b"bytes", object]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_the_text_is_jsons_own(value):
    assert dumps(value) == json.dumps(value)
    assert dumps_compact(value) == json.dumps(value, separators=(",", ":"), default=str)
    assert text_encoder()(value) == json.JSONEncoder(default=str).encode(value)


@pytest.mark.parametrize("value", LENIENT, ids=repr)
def test_what_json_cannot_encode_is_its_string_form_with_default_str_and_refused_without(value):
    assert dumps_compact(value) == json.dumps(value, separators=(",", ":"), default=str)
    with pytest.raises(TypeError) as ours:
        dumps(value)
    with pytest.raises(TypeError) as jsons:
        json.dumps(value)
    assert str(ours.value) == str(jsons.value)


def test_a_structure_that_holds_itself_is_refused_as_json_refuses_it():
    loop: dict = {"a": 1}
    loop["self"] = loop
    nested: list = [1, {"b": []}]
    nested[1]["b"].append(nested)
    for value in (loop, nested):
        for encode in (dumps, dumps_compact):
            with pytest.raises(ValueError, match="^Circular reference detected$"):
                encode(value)
    assert dumps({"a": [loop["a"]]}) == '{"a": [1]}'  # the encoder is as good as new afterwards


def test_a_structure_deeper_than_the_interpreter_allows_raises_recursion_error_as_json_does():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(RecursionError):
        json.dumps(deep)
    with pytest.raises(RecursionError):
        dumps(deep)


def test_one_encoder_serves_many_threads_at_once():
    errors: list = []
    values = [{"thread": n, "items": list(range(n)), "nested": {"k": [str(i) for i in range(50)]}} for n in range(8)]

    def work(value):
        try:
            for _ in range(2000):
                assert dumps(value) == json.dumps(value)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(v,)) for v in values]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
