"""The relay's bookkeeping: a run whose process died (no ``finish`` in the log) ends its answer as it
stands, and a thread with a run suspended on an approval stays open for the relay."""

import pytest
from django.utils import timezone

from agent_channels.models import ChannelRun, ChannelThread, OutboxMessage
from agent_channels.relay import thread_relay
from agents.models import Run
from agents.threads.identity import thread_key

pytestmark = pytest.mark.django_db


@pytest.fixture
def thread():
    return ChannelThread.objects.create(agent_id="ops", platform="slack", key="T1:C1:1.1", resource_id="slack:T1",
                                        thread_id="slack:T1:C1:1.1", relay_open=True,
                                        target={"team": "T1", "channel": "C1", "thread_ts": "1.1"})


def test_a_run_that_died_ends_its_answer_without_a_failure_notice(thread):
    ChannelRun.objects.create(run_id="r1", channel_thread=thread, text="partial answer")
    Run.objects.create(id="r1", agent_id="ops", status="failed", error="the run's process stopped",
                       started_at=timezone.now())
    assert thread_relay(channel_thread_id=thread.pk) == 0
    [row] = OutboxMessage.objects.all()
    assert (row.key, row.body, row.final) == ("answer:r1:0", "partial answer", True)
    assert ChannelRun.objects.get().finish_reason == "ended"
    assert ChannelThread.objects.get().relay_open is False


def test_a_suspended_run_keeps_the_thread_open(thread):
    ChannelRun.objects.create(run_id="r2", channel_thread=thread, finish_reason="suspended")
    Run.objects.create(id="r2", agent_id="ops", status="suspended", started_at=timezone.now())
    thread_relay(channel_thread_id=thread.pk)
    assert ChannelThread.objects.get().relay_open is True and OutboxMessage.objects.count() == 0


def test_a_run_whose_end_commits_between_the_relays_reads_is_relayed_with_its_text(thread, monkeypatch):
    """The run's end writes its events and its record in one transaction. When that commits after the
    relay found no events but before it read the run's record, the run is not taken for one that
    died: its text and its finish are relayed by the next pass."""
    from agent_channels import relay
    from agents.models import Thread, ThreadEvent

    memory = Thread.objects.create(key=thread_key(thread.resource_id, thread.thread_id), thread_id=thread.thread_id,
                                   resource_id=thread.resource_id)
    ChannelRun.objects.create(run_id="r3", channel_thread=thread)  # the handoff's
    Run.objects.create(id="r3", agent_id="ops", status="running", started_at=timezone.now())
    runs_ended = relay.runs_ended

    def end_commits_meanwhile(channel_thread):
        chunks = [{"type": "start", "payload": {}}, {"type": "text-delta", "payload": {"text": "the answer"}},
                  {"type": "finish", "payload": {"stepResult": {"reason": "stop"}}}]
        ThreadEvent.objects.bulk_create([ThreadEvent(thread=memory, seq=i + 1, run_id="r3", chunk=chunk)
                                         for i, chunk in enumerate(chunks)])
        Run.objects.filter(id="r3").update(status="completed")
        monkeypatch.setattr(relay, "runs_ended", runs_ended)
        return runs_ended(channel_thread)

    monkeypatch.setattr(relay, "runs_ended", end_commits_meanwhile)
    assert thread_relay(channel_thread_id=thread.pk) == 0
    assert ChannelThread.objects.get().relay_open is True and not ChannelRun.objects.get().finished
    assert thread_relay(channel_thread_id=thread.pk) == 3
    [row] = OutboxMessage.objects.all()
    assert (row.key, row.body, row.final) == ("answer:r3:0", "the answer", True)
    assert ChannelRun.objects.get().finish_reason == "stop"
