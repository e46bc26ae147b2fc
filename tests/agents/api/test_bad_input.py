"""Bad input on every JSON route is a 400 with a stable code and stores nothing: JSON nested too
deep, lone surrogates and NUL characters (the database cannot store them), a title longer than its
column, numerals Python's ``int()`` refuses (``²``, more than 4,300 digits), NaN and Infinity."""

import json

import pytest

from agents.api.errors import ApiError
from agents.models import Message, Thread, ThreadInput
from tests.agents.api.conftest import Api, body

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

#: every route that reads a JSON body (method, path)
JSON_ROUTES = [
    ("post", "/api/agents/echo/generate"), ("post", "/api/agents/echo/stream"),
    ("post", "/api/agents/echo/send-message"), ("post", "/api/agents/echo/queue-message"),
    ("post", "/api/agents/echo/signals"), ("post", "/api/agents/echo/state-signals"),
    ("post", "/api/agents/echo/notifications"), ("post", "/api/agents/echo/threads/subscribe"),
    ("post", "/api/agents/echo/threads/abort"), ("post", "/api/agents/echo/threads/queue/cancel"),
    ("post", "/api/agents/echo/send-tool-approval"), ("post", "/api/agents/echo/approve-tool-call"),
    ("post", "/api/agents/echo/decline-tool-call"), ("post", "/api/agents/echo/approve-tool-call-generate"),
    ("post", "/api/agents/echo/decline-tool-call-generate"), ("post", "/api/memory/threads"),
    ("patch", "/api/memory/threads/t1"), ("patch", "/api/notifications/n1"),
]


def nested(depth: int, leaf: str = "1") -> str:
    return '{"a":' * depth + leaf + "}" * depth


async def send_raw(api: Api, method: str, path: str, raw: bytes):
    return await getattr(api.client, method)(path, raw, content_type="application/json", headers=api.headers)


async def stored() -> tuple[int, int, int]:
    return (await Thread.objects.acount(), await Message.objects.acount(), await ThreadInput.objects.acount())


def refused(response, code: str) -> dict:
    assert response.status_code == 400, response.content
    answer = body(response)
    assert answer["code"] == code and answer["error"] == answer["message"]
    return answer


@pytest.mark.parametrize("raw", [b"[" * 100_000, b'{"a":' * 100_000, nested(100_000).encode(),
                                 json.dumps({"message": "x", "threadId": "t1"}).encode()[:-1]
                                 + b', "attributes": ' + nested(200).encode() + b"}"],
                         ids=["open-lists", "open-objects", "closed-objects", "attributes-200-deep"])
async def test_json_nested_too_deep_is_invalid_json_on_every_route(alice: Api, raw):
    for method, path in JSON_ROUTES:
        answer = refused(await send_raw(alice, method, path, raw), "invalid_json")
        assert "nested" in answer["message"], (path, answer)
    assert await stored() == (0, 0, 0)


async def test_nesting_up_to_the_limit_is_accepted(alice: Api):
    response = await alice.post("/api/agents/echo/send-message", {
        "message": {"contents": "hi", "metadata": json.loads(nested(60))}, "threadId": "t1"})
    assert response.status_code == 200, response.content


LONE = "\\ud800"
SURROGATE_BODIES = [
    ("post", "/api/agents/echo/send-message", f'{{"message": "a{LONE}b", "threadId": "t1"}}'),
    ("post", "/api/agents/echo/send-message", f'{{"message": "hi", "threadId": "t{LONE}"}}'),
    ("post", "/api/agents/echo/send-message", f'{{"message": "hi", "runId": "r{LONE}"}}'),
    ("post", "/api/agents/echo/send-message",
     f'{{"message": {{"contents": "hi", "attributes": {{"k": "v{LONE}"}}}}, "threadId": "t1"}}'),
    ("post", "/api/agents/echo/send-message", f'{{"message": "hi", "threadId": "t1", "{LONE}": 1}}'),
    ("post", "/api/agents/echo/signals",
     f'{{"signal": {{"type": "user", "contents": "{LONE}"}}, "threadId": "t1"}}'),
    ("post", "/api/agents/echo/generate", f'{{"messages": "a{LONE}"}}'),
    ("post", "/api/memory/threads", f'{{"threadId": "t1", "title": "a{LONE}"}}'),
    ("post", "/api/memory/threads", f'{{"threadId": "t{LONE}"}}'),
    ("post", "/api/agents/echo/send-tool-approval",
     f'{{"threadId": "t1", "toolCallId": "c{LONE}", "approved": true}}'),
    ("post", "/api/agents/echo/approve-tool-call", f'{{"runId": "r{LONE}", "toolCallId": "c1"}}'),
]


async def test_a_lone_surrogate_anywhere_in_a_body_is_invalid_text(alice: Api):
    for method, path, text in SURROGATE_BODIES:
        answer = refused(await send_raw(alice, method, path, text.encode()), "invalid_text")
        assert "surrogate" in answer["message"], (path, text)
    assert await stored() == (0, 0, 0)


async def test_a_surrogate_pair_is_one_character_and_accepted(alice: Api):
    response = await send_raw(alice, "post", "/api/agents/echo/send-message",
                              b'{"message": "smile \\ud83d\\ude00", "threadId": "t1"}')
    assert response.status_code == 200, response.content
    assert body(response)["signal"]["contents"] == "smile \U0001F600"


NUL_BODIES = [
    ("post", "/api/agents/echo/send-message", {"message": "a\x00b", "threadId": "t1"}),
    ("post", "/api/agents/echo/send-message",
     {"message": {"contents": [{"type": "text", "text": "a\x00"}]}, "threadId": "t1"}),
    ("post", "/api/agents/echo/send-message", {"message": {"contents": "hi", "metadata": {"k\x00": 1}},
                                               "threadId": "t1"}),
    ("post", "/api/agents/echo/queue-message", {"message": "\x00", "threadId": "t1"}),
    ("post", "/api/agents/echo/state-signals",
     {"state": {"id": "browser", "contents": "a\x00", "mode": "snapshot"}, "threadId": "t1"}),
    ("post", "/api/agents/echo/generate", {"messages": [{"role": "user", "content": "a\x00"}]}),
    ("post", "/api/memory/threads", {"threadId": "t1", "title": "a\x00b"}),
    ("patch", "/api/memory/threads/t1", {"title": "a\x00b"}),
    ("post", "/api/agents/echo/send-tool-approval", {"threadId": "t1", "toolCallId": "c\x00", "approved": True}),
    ("post", "/api/agents/echo/decline-tool-call", {"runId": "r1", "toolCallId": "c\x00"}),
    ("patch", "/api/notifications/n1", {"status": "seen\x00"}),
]


async def test_a_nul_character_anywhere_in_a_body_is_invalid_text(alice: Api):
    for method, path, data in NUL_BODIES:
        answer = refused(await send_raw(alice, method, path, json.dumps(data).encode()), "invalid_text")
        assert "NUL" in answer["message"], (path, data)
    assert await stored() == (0, 0, 0)


async def test_a_nul_character_in_the_query_is_invalid_text(alice: Api):
    for query in ("?resourceId=a%00b", "?agentId=e%00", "?threadId=t%00", "?source=%00", "?a%00=1"):
        for path in ("/api/memory/threads", "/api/notifications", "/api/agents/echo/threads/queue"):
            refused(await alice.client.get(path + query, headers=alice.headers), "invalid_text")


async def test_a_nul_character_in_the_path_is_invalid_text(alice: Api):
    for path in ("/api/memory/threads/t%00", "/api/memory/threads/t%00/messages"):
        refused(await alice.client.get(path, headers=alice.headers), "invalid_text")
    refused(await alice.patch("/api/notifications/n%00", {"status": "seen"}), "invalid_text")


async def test_a_title_longer_than_its_column_is_invalid_field(alice: Api):
    answer = refused(await alice.post("/api/memory/threads", {"threadId": "t1", "title": "x" * 256}),
                     "invalid_field")
    assert answer["message"] == "title must be at most 255 characters"
    assert await stored() == (0, 0, 0)
    assert (await alice.post("/api/memory/threads", {"threadId": "t1", "title": "x" * 255})).status_code == 200
    refused(await alice.patch("/api/memory/threads/t1", {"title": "y" * 300}), "invalid_field")
    assert (await Thread.objects.aget(thread_id="t1")).title == "x" * 255


async def test_nan_infinity_and_huge_numbers_are_invalid_json(alice: Api):
    for number in (b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400", b"9" * 5000):
        raw = b'{"message": {"contents": "hi", "metadata": {"x": ' + number + b'}}, "threadId": "t1"}'
        refused(await send_raw(alice, "post", "/api/agents/echo/send-message", raw), "invalid_json")
    assert await stored() == (0, 0, 0)


ODD_NUMERALS = ["²", "١٢", "1" * 5000, "9" * 30, "-1", "1.5", "1e3", "0x10", "1_000"]


async def test_an_odd_page_or_per_page_is_invalid_field(alice: Api):
    await alice.post("/api/memory/threads", {"threadId": "t1"})
    for path in ("/api/memory/threads", "/api/memory/threads/t1/messages", "/api/notifications"):
        for name in ("page", "perPage"):
            for value in ODD_NUMERALS:
                answer = refused(await alice.get(path, **{name: value}), "invalid_field")
                assert answer["message"].startswith(f"{name} must be a whole number"), (path, name, value)


async def test_an_odd_last_seq_or_last_event_id_is_invalid_field(alice: Api):
    for value in ("²", "١٢", "1" * 5000, "9" * 30, -1, 1.5, 10 ** 30, True, "x"):
        response = await alice.post("/api/agents/echo/threads/subscribe", {"threadId": "t1", "lastSeq": value})
        assert refused(response, "invalid_field")["message"].startswith("lastSeq must be"), value
    for value in ("²", "1" * 5000, "9" * 30, "-1", "x"):
        response = await alice.post("/api/agents/echo/threads/subscribe", {"threadId": "t1"},
                                    headers={"Last-Event-ID": value})
        assert refused(response, "invalid_field")["message"].startswith("Last-Event-ID must be"), value
    assert await stored() == (0, 0, 0)


async def test_an_odd_declared_length_is_not_a_number_to_compare():
    from types import SimpleNamespace

    from agents.api.parsing import raw_body

    # isdigit() accepts both, int() refuses both
    assert raw_body(SimpleNamespace(META={"CONTENT_LENGTH": "²"}, body=b"{}")) == b"{}"
    for declared in ("1" * 5000, "9" * 30):
        with pytest.raises(ApiError) as refusal:
            raw_body(SimpleNamespace(META={"CONTENT_LENGTH": declared}, body=b"{}"))
        assert refusal.value.code == "body_too_large"
