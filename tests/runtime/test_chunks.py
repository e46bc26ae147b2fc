"""The chunk envelope, spelled once."""

from agents.runtime.chunks import chunk, data_chunk


def test_an_agent_chunk():
    assert chunk("start", "run-1") == {"type": "start", "runId": "run-1", "from": "AGENT", "payload": {}}
    assert chunk("abort", "run-1", {"reason": "aborted"}) == {
        "type": "abort", "runId": "run-1", "from": "AGENT", "payload": {"reason": "aborted"}}


def test_a_data_part_has_data_and_no_payload():
    assert data_chunk("data-signal", "run-1", {"id": "s"}) == {
        "type": "data-signal", "runId": "run-1", "from": "AGENT", "data": {"id": "s"}, "transient": True}
    assert data_chunk("data-progress", None, 1, transient=False) == {
        "type": "data-progress", "runId": None, "from": "AGENT", "data": 1}
