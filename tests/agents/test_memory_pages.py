"""The memory API's message pages (``memory_messages_page``) on a long thread: every page as Mastra
pages it (page 0 the newest, each page chronological, reminders left out unless asked), each read
from the nearer end of the thread so that the pages people read cost the same however long it is."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from agents.memory_threads import memory_messages_page
from agents.models import Message, Thread

pytestmark = pytest.mark.django_db

REMINDER = {"format": 2, "parts": [{"type": "text", "text": "r"}],
            "metadata": {"signal": {"type": "system-reminder", "attributes": {}}}}


@pytest.fixture
def thread() -> Thread:
    """m1 … m11, with a reminder (hidden by default) after m5."""
    row = Thread.objects.create(resource_id="u1", thread_id="long")
    start = timezone.now() - timedelta(hours=1)
    rows = []
    for n in range(1, 12):
        rows.append(Message(message_id=f"m{n}", thread=row, resource_id="u1", role="user",
                            content={"format": 2, "parts": [{"type": "text", "text": f"m{n}"}]},
                            created_at=start + timedelta(seconds=n)))
        if n == 5:
            rows.append(Message(message_id="reminder", thread=row, resource_id="u1", role="signal",
                                type="system-reminder", content=REMINDER, created_at=start + timedelta(seconds=n)))
    Message.objects.bulk_create(rows)
    return row


def ids(listing: dict) -> list[str]:
    return [m["id"] for m in listing["messages"]]


def test_every_page_of_a_long_thread(thread):
    pages = [memory_messages_page(thread=thread, page=p, per_page=3, include_system_reminders=False) for p in range(5)]
    assert [ids(p) for p in pages] == [["m9", "m10", "m11"], ["m6", "m7", "m8"], ["m3", "m4", "m5"], ["m1", "m2"], []]
    assert [(p["total"], p["hasMore"]) for p in pages] == [(11, True), (11, True), (11, True), (11, False), (11, False)]
    with_reminders = [ids(memory_messages_page(thread=thread, page=p, per_page=4, include_system_reminders=True))
                      for p in range(3)]
    assert with_reminders == [["m8", "m9", "m10", "m11"], ["m5", "reminder", "m6", "m7"],
                              ["m1", "m2", "m3", "m4"]]
    everything = memory_messages_page(thread=thread, page=0, per_page=False, include_system_reminders=False)
    assert ids(everything) == [f"m{n}" for n in range(1, 12)] and everything["hasMore"] is False


def test_the_newest_page_is_read_from_the_newest_end(thread):
    with CaptureQueriesContext(connection) as queries:
        memory_messages_page(thread=thread, page=0, per_page=3, include_system_reminders=False)
    page_query = queries.captured_queries[-1]["sql"]
    assert "DESC" in page_query and "OFFSET" not in page_query, page_query
    with CaptureQueriesContext(connection) as queries:
        memory_messages_page(thread=thread, page=3, per_page=3, include_system_reminders=False)
    oldest_query = queries.captured_queries[-1]["sql"]
    assert "DESC" not in oldest_query and "OFFSET" not in oldest_query, oldest_query
