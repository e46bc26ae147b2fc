"""Two processes receiving the same Slack event at once store it once: two threads, each on its own
database connection, store the same event (and its ``message`` copy) behind a barrier. Runs on
SQLite and, in the PostgreSQL pass, on PostgreSQL."""

import threading

import pytest
from django.db import connection

from agent_channels.inbound import MENTION, Inbound
from agent_channels.models import ChannelEvent
from agent_channels.receive import event_store

pytestmark = pytest.mark.django_db(transaction=True)


def inbound(event_id: str) -> Inbound:
    return Inbound(kind=MENTION, event_id=event_id, message_key="T1:C1:1700000001.000100",
                   thread_key="T1:C1:1700000001.000100", target={"team": "T1", "channel": "C1"}, bucket="slack:T1",
                   payload={"user": "U123", "text": "hi"})


@pytest.mark.parametrize("event_ids", [("Ev1", "Ev1"), ("Ev1", "Ev2")], ids=["retry", "app_mention+message"])
def test_two_receivers_at_once_store_one_event(event_ids):
    barrier, outcomes = threading.Barrier(2), []

    def receive(event_id: str) -> None:
        try:
            barrier.wait()
            outcomes.append(event_store(agent_id="ops", platform="slack", inbound=inbound(event_id))[0])
        finally:
            connection.close()

    threads = [threading.Thread(target=receive, args=(event_id,)) for event_id in event_ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["accepted", "duplicate"]
    assert ChannelEvent.objects.count() == 1
