"""The decoder of JSON from outside (``agents.runtime.json_input``): strict JSON, at most 64 levels
deep, no lone surrogate or NUL in any string or key. Pure: no database."""

from __future__ import annotations

import pytest

from agents.runtime.json_input import MAX_JSON_DEPTH, InputError, json_decode, text_check, text_problem


def refusal(text) -> InputError:
    with pytest.raises(InputError) as caught:
        json_decode(text, what="the body")
    return caught.value


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_limit_is_decoded_and_one_more_level_is_refused():
    assert json_decode(nested(MAX_JSON_DEPTH)) is not None
    error = refusal(nested(MAX_JSON_DEPTH + 1))
    assert (error.code, error.message) == ("invalid_json", "the body is nested deeper than 64 levels")


@pytest.mark.parametrize("text", ["[" * 100_000, '{"a":' * 100_000, nested(5000)])
def test_nesting_past_pythons_recursion_limit_is_refused_not_a_recursion_error(text):
    assert refusal(text).code == "invalid_json"


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "9" * 4301])
def test_nan_infinity_and_numbers_python_cannot_hold_are_invalid_json(number):
    assert refusal(f'{{"n": {number}}}').code == "invalid_json"


def test_large_but_finite_numbers_are_decoded():
    assert json_decode('{"n": 1e300, "m": ' + "9" * 4300 + "}")["n"] == 1e300


@pytest.mark.parametrize("text,where", [
    ('"\\ud800"', "the body: a string"), ('{"a": ["x\\udfff"]}', "the body: a string"),
    ('{"\\udc00": 1}', "the body: a key"), ('"\\ude00\\ud83d"', "the body: a string"),  # a pair in the wrong order
])
def test_a_lone_surrogate_is_invalid_text(text, where):
    error = refusal(text)
    assert error.code == "invalid_text" and error.message.startswith(f"{where} holds a lone surrogate")


@pytest.mark.parametrize("text", ['"\\u0000"', '{"a": {"b": "x\\u0000"}}', '{"k\\u0000": 1}', '["a", "\\u0000"]'])
def test_a_nul_character_is_invalid_text(text):
    error = refusal(text)
    assert error.code == "invalid_text" and "NUL" in error.message


def test_a_surrogate_pair_is_one_character_and_control_characters_other_than_nul_pass():
    assert json_decode('"\\ud83d\\ude00 \\t\\n\\u0001"') == "\U0001F600 \t\n\x01"


def test_bytes_that_are_not_utf8_are_invalid_json():
    assert refusal(b'"\xff"').code == "invalid_json"
    assert json_decode('"é"'.encode()) == "é"


def test_text_check_names_where():
    assert text_problem("fine") is None
    with pytest.raises(InputError) as caught:
        text_check("a\x00", "the query parameter page")
    assert (caught.value.code, caught.value.message) == ("invalid_text", "the query parameter page holds a NUL character")
