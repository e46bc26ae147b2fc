"""The editor locks of the ``editor`` option, rule by rule (Mastra's "Editor overrides")."""

import pytest

from agents.editor.locks import EditorLocks

ALL = {"instructions": "New.", "tools": ["calculate"], "tool_descriptions": {"calculate": "Math."},
       "model": [{"model": "local/echo", "max_retries": 0, "enabled": True}]}


@pytest.mark.parametrize("editor, editable, summary", [
    (None, ("instructions", "tools", "tool_descriptions"), "instructions, tool membership, tool descriptions"),
    (False, (), "read-only"),
    ({"instructions": True}, ("instructions",), "instructions"),
    ({"tools": True}, ("tools", "tool_descriptions"), "tool membership, tool descriptions"),
    ({"tools": {"description": True}}, ("tool_descriptions",), "tool descriptions"),
    ({"instructions": True, "tools": {"description": True}}, ("instructions", "tool_descriptions"),
     "instructions, tool descriptions"),
    ({"instructions": False, "tools": False}, (), "read-only"),
    ({"tools": {"description": False}}, (), "read-only"),
    ({}, (), "read-only"),
    ({"model": True}, ("model",), "model"),
    ({"instructions": True, "tools": {"description": True}, "model": True},
     ("instructions", "tool_descriptions", "model"), "instructions, tool descriptions, model"),
])
def test_each_editor_option_allows_exactly_its_fields(editor, editable, summary):
    locks = EditorLocks.of(editor)
    assert locks.editable_fields == editable
    assert locks.describe() == summary
    kept, ignored = locks.strip(ALL)
    assert sorted(kept) == sorted(editable)
    assert ignored == [f for f in ("instructions", "tools", "tool_descriptions", "model") if f not in editable]
