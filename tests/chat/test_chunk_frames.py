"""A chunk's frame is encoded once for every socket on its thread (``chat.frames.chunk_text``)."""

from __future__ import annotations

import json

from chat import frames


def test_a_chunk_is_encoded_once_however_many_sockets_get_it(monkeypatch):
    calls = []
    dumps = frames.dumps

    def counting_dumps(value):
        calls.append(value)
        return dumps(value)

    monkeypatch.setattr(frames, "dumps", counting_dumps)
    chunk = {"type": "text-delta", "runId": "r1", "seq": 7, "payload": {"id": "t1", "text": "héllo \"you\""}}
    texts = [frames.chunk_text(chunk) for _ in range(5)]
    assert texts == [json.dumps(chunk)] * 5  # what every socket was sent before: json.dumps of the chunk
    assert calls == [chunk]
    twin = dict(chunk)  # an equal chunk is another chunk: encoded on its own
    assert frames.chunk_text(twin) == texts[0] and len(calls) == 2


def test_the_encoded_chunks_kept_are_bounded_and_a_forgotten_one_is_encoded_again():
    first = {"type": "text-delta", "seq": 0, "payload": {"text": "a"}}
    frames.chunk_text(first)
    for seq in range(1, frames.CHUNK_TEXTS + 1):
        frames.chunk_text({"type": "text-delta", "seq": seq, "payload": {"text": "b"}})
    assert len(frames._chunk_texts) == frames.CHUNK_TEXTS
    assert id(first) not in frames._chunk_texts or frames._chunk_texts[id(first)][0] is not first
    assert frames.chunk_text(first) == json.dumps(first)
