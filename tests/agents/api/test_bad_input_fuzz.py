"""Fuzz every JSON route, every query string, the URL's ids and ``Last-Event-ID`` with the shapes of
``tests.bad_input`` (deep nesting, lone surrogates, NUL, long strings, odd numerals, wrong types):
never a 5xx, always a JSON error with a stable code. The explicit examples send each shape to every
route, so the cases PostgreSQL alone would refuse run on both databases."""

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from tests.agents.api.conftest import Api
from tests.bad_input import check_error_body, json_bodies, numerals, odd_strings, query_strings, shaped_body, url_part

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

MESSAGE = {"threadId": "t1", "resourceId": "alice", "runId": "run_1", "ifActive": {"behavior": "deliver"},
           "ifIdle": {"behavior": "persist"}}
TOOL_CALL = {"runId": "run_1", "toolCallId": "call_1", "requestContext": {"k": "v"}}
#: label → (method, path, a good value per field)
JSON_ROUTES = {
    "generate": ("post", "/api/agents/echo/generate",
                 {"messages": "hi", "memory": {"thread": "t1", "resource": "alice"}, "maxSteps": 2,
                  "modelSettings": {"temperature": 0.1}, "threadId": "t1", "resourceId": "alice"}),
    "stream": ("post", "/api/agents/echo/stream", {"messages": [{"role": "user", "content": "hi"}], "maxSteps": 1}),
    "send-message": ("post", "/api/agents/echo/send-message",
                     {**MESSAGE, "message": st.sampled_from(["hi", {"contents": "hi", "attributes": {"a": 1}}])}),
    "queue-message": ("post", "/api/agents/echo/queue-message", {**MESSAGE, "message": "later"}),
    "signals": ("post", "/api/agents/echo/signals", {**MESSAGE, "signal": {"type": "user", "contents": "hi"}}),
    "state-signals": ("post", "/api/agents/echo/state-signals",
                      {**MESSAGE, "state": {"id": "browser", "mode": "snapshot", "contents": "page"}}),
    "notifications": ("post", "/api/agents/echo/notifications",
                      {"threadId": "t1", "resourceId": "alice", "ifIdle": {"behavior": "persist"},
                       "notification": {"source": "ci", "kind": "build", "summary": "red", "payload": {"n": 1}}}),
    "subscribe": ("post", "/api/agents/echo/threads/subscribe", {"threadId": "t1", "lastSeq": 0}),
    "abort": ("post", "/api/agents/echo/threads/abort", {"threadId": "t1", "resourceId": "alice"}),
    "queue-cancel": ("post", "/api/agents/echo/threads/queue/cancel", {"threadId": "t1", "ids": ["in_1"]}),
    "send-tool-approval": ("post", "/api/agents/echo/send-tool-approval",
                           {"threadId": "t1", "toolCallId": "call_1", "approved": True, "runId": "run_1"}),
    "approve-tool-call": ("post", "/api/agents/echo/approve-tool-call", TOOL_CALL),
    "decline-tool-call": ("post", "/api/agents/echo/decline-tool-call", TOOL_CALL),
    "approve-tool-call-generate": ("post", "/api/agents/echo/approve-tool-call-generate", TOOL_CALL),
    "decline-tool-call-generate": ("post", "/api/agents/echo/decline-tool-call-generate", TOOL_CALL),
    "thread-create": ("post", "/api/memory/threads",
                      {"threadId": "t1", "title": "First", "metadata": {"k": 1}, "resourceId": "alice"}),
    "thread-update": ("patch", "/api/memory/threads/t1", {"title": "Renamed", "metadata": {"k": 2}}),
    "notification-update": ("patch", "/api/notifications/n1", {"status": "seen"}),
}
#: GET routes and their query parameters
QUERY_ROUTES = {
    "/api/memory/threads": ["resourceId", "page", "perPage", "agentId"],
    "/api/memory/threads/t1": ["resourceId", "agentId"],
    "/api/memory/threads/t1/messages": ["resourceId", "page", "perPage", "agentId", "includeSystemReminders"],
    "/api/notifications": ["status", "source", "priority", "threadId", "resourceId", "page", "perPage"],
    "/api/agents/echo/threads/queue": ["threadId", "resourceId"],
}
#: routes with an id in the URL ({} is the id)
ID_ROUTES = [("get", "/api/memory/threads/{}"), ("get", "/api/memory/threads/{}/messages"),
             ("delete", "/api/memory/threads/{}"), ("get", "/api/agents/{}"), ("get", "/api/agents/echo/threads/queue?threadId={}")]

#: ids for the URL ("" and "/" would name no route: Django's own 404, not the API's)
url_ids = odd_strings().filter(lambda text: text and "/" not in text)
bodies = st.fixed_dictionaries({label: json_bodies(good) for label, (_, _, good) in JSON_ROUTES.items()})
queries = st.fixed_dictionaries({path: query_strings(names) for path, names in QUERY_ROUTES.items()})


def shaped(shape: str) -> dict:
    return {label: shaped_body(good, shape) for label, (_, _, good) in JSON_ROUTES.items()}


def shaped_queries(value: str) -> dict:
    return {path: "?" + "&".join(f"{name}={url_part(value)}" for name in names) for path, names in QUERY_ROUTES.items()}


async def finish(response) -> None:
    """Close a stream the route opened (a subscription stays open until the client leaves)."""
    if getattr(response, "streaming", False):
        iterator = response.streaming_content.__aiter__()
        if hasattr(iterator, "aclose"):
            await iterator.aclose()


@settings(max_examples=8, deadline=None, database=None, derandomize=True, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(bodies=bodies, queries=queries, ids=st.lists(url_ids, min_size=1, max_size=2),
       last_event_id=numerals())
@example(bodies=shaped("nul"), queries=shaped_queries("a\x00b"), ids=["t\x00"], last_event_id="²")
@example(bodies=shaped("surrogate"), queries=shaped_queries("\ud800"), ids=["\udfff"], last_event_id="1" * 5000)
@example(bodies=shaped("long"), queries=shaped_queries("x" * 300), ids=["x" * 300], last_event_id="9" * 30)
@example(bodies=shaped("deep"), queries=shaped_queries("١٢"), ids=["١٢"], last_event_id="-1")
@example(bodies=shaped("numeral"), queries=shaped_queries("²"), ids=["²"], last_event_id="١٢")
@example(bodies=shaped("huge"), queries=shaped_queries("9" * 5000), ids=["9" * 5000], last_event_id="1.5")
@example(bodies=shaped("nan"), queries=shaped_queries("-1"), ids=["-1"], last_event_id="NaN")
@example(bodies=shaped("object"), queries=shaped_queries("1.5"), ids=["\x01"], last_event_id=" ")
async def test_no_bad_input_is_a_server_error(alice: Api, bodies, queries, ids, last_event_id):
    for label, (method, path, _) in JSON_ROUTES.items():
        raw = bodies[label]
        response = await getattr(alice.client, method)(path, raw, content_type="application/json",
                                                       headers=alice.headers)
        check_error_body(response.status_code, response.content if not response.streaming else b"", (label, raw[:200]))
        await finish(response)
    for path, query in queries.items():
        response = await alice.client.get(path + query, headers=alice.headers)
        check_error_body(response.status_code, response.content, (path, query[:200]))
    for value in ids:
        for method, template in ID_ROUTES:
            path = template.format(url_part(value))
            response = await getattr(alice.client, method)(path, headers=alice.headers)
            check_error_body(response.status_code, response.content, (method, path[:200]))
    header = last_event_id.encode("utf-8", "surrogatepass").decode("latin-1")  # the bytes a client sends
    response = await alice.client.post("/api/agents/echo/threads/subscribe", b'{"threadId": "t1"}',
                                       content_type="application/json",
                                       headers={**alice.headers, "Last-Event-ID": header})
    check_error_body(response.status_code, b"" if response.streaming else response.content, last_event_id)
    await finish(response)
