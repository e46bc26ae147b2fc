"""agents.batch_writer: a bounded queue written in batches off the caller's path (the semantics of
OpenTelemetry's batch span processor): by size, by interval, on flush and on a clean shutdown;
drops and failed writes counted, logged and handed to their hooks."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from agents.batch_writer import BatchWriter

ROOT = Path(__file__).resolve().parents[2]


class Sink:
    """A ``write`` that keeps every batch; ``gate`` (when set) holds each write until it opens."""

    def __init__(self, gate: threading.Event | None = None, fail_on: set | None = None):
        self.batches: list[list] = []
        self.gate = gate
        self.fail_on = fail_on or set()
        self.started = threading.Event()

    def __call__(self, items: list) -> None:
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(10)
        if self.fail_on & set(items):
            raise RuntimeError("database is down")
        self.batches.append(list(items))

    @property
    def items(self) -> list:
        return [i for batch in self.batches for i in batch]


def test_nothing_submitted_is_lost_on_a_clean_shutdown():
    sink = Sink()
    writer = BatchWriter("t", sink, max_queue=20_000, max_batch=100, interval_s=60)
    for n in range(10_000):
        assert writer.submit(n)
    assert writer.shutdown(timeout=30)
    assert sink.items == list(range(10_000))
    assert all(len(batch) <= 100 for batch in sink.batches)
    assert writer.stats() | {"lastErrorAt": None} == {
        "name": "t", "submitted": 10_000, "written": 10_000, "failed": 0, "dropped": 0, "queued": 0,
        "batches": len(sink.batches), "failedBatches": 0, "lastError": "", "lastErrorAt": None}
    assert not writer.submit("late")  # shut down: dropped and counted
    assert writer.stats()["dropped"] == 1


def test_a_process_that_exits_normally_writes_everything_queued(tmp_path):
    """No shutdown call: the ``atexit`` handler flushes before the interpreter goes."""
    out = tmp_path / "written.txt"
    script = textwrap.dedent(f"""
        from agents.batch_writer import BatchWriter
        out = open({str(out)!r}, "w")
        def write(items):
            out.write("".join(f"{{i}}\\n" for i in items)); out.flush()
        writer = BatchWriter("exit", write, max_batch=7, interval_s=3600)
        for n in range(1000):
            writer.submit(n)
    """)
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=60)
    assert out.read_text().split() == [str(n) for n in range(1000)]


def test_a_forked_child_writes_its_own_items_and_not_its_parents(tmp_path):
    """A prefork worker: the parent's queued items stay the parent's; the child's queue starts
    empty, with a thread of its own, and its clean exit writes what it submitted."""
    out = tmp_path / "written.txt"
    script = textwrap.dedent(f"""
        import os, threading
        from agents.batch_writer import BatchWriter
        gate = threading.Event()
        def write(items):
            gate.wait(30)  # the parent's first batch is held until the child has forked
            with open({str(out)!r}, "a") as f:
                f.write("".join(f"{{os.getpid()}} {{i}}\\n" for i in items))
        writer = BatchWriter("fork", write, max_batch=2, interval_s=3600)
        for n in ("p1", "p2", "p3"):
            writer.submit(n)
        pid = os.fork()
        if pid == 0:
            gate.set()
            fresh = writer.stats()["queued"] == 0 and writer.stats()["submitted"] == 0
            writer.submit("c1")
            os._exit(0 if writer.shutdown(timeout=30) and fresh else 1)
        _, status = os.waitpid(pid, 0)
        gate.set()
        print(pid)
        assert writer.shutdown(timeout=30)
        assert status == 0, "the child's writer was not fresh, or did not write"
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, check=True, timeout=60,
                          capture_output=True, text=True)
    child = done.stdout.strip()
    lines = out.read_text().split("\n")[:-1]
    assert sorted(line.split()[1] for line in lines if line.split()[0] == child) == ["c1"]
    assert sorted(line.split()[1] for line in lines if line.split()[0] != child) == ["p1", "p2", "p3"]


def test_a_full_batch_is_written_at_once_and_a_partial_one_after_the_interval():
    written_at: list[float] = []
    sink = Sink()
    writer = BatchWriter("t", lambda items: (sink(items), written_at.append(time.monotonic())),
                         max_batch=5, interval_s=1.0)
    submitted = time.monotonic()
    for n in range(5):
        writer.submit(n)
    assert writer.flush(timeout=5)
    assert sink.batches == [[0, 1, 2, 3, 4]]
    assert written_at[0] - submitted < 1.0  # the size triggered it, not the interval
    writer.submit(5)
    deadline = time.monotonic() + 5
    while len(sink.batches) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sink.batches == [[0, 1, 2, 3, 4], [5]]
    # a lone item waits for the interval (counted from when the writer last looked at an empty queue)
    assert written_at[1] - written_at[0] >= 0.95
    writer.shutdown()


def test_flush_returns_once_everything_submitted_before_it_is_written():
    sink = Sink()
    writer = BatchWriter("t", sink, max_batch=1000, interval_s=3600)
    for n in range(3):
        writer.submit(n)
    assert writer.flush(timeout=5)
    assert sink.items == [0, 1, 2]
    assert writer.flush(timeout=5)  # nothing new: at once
    writer.shutdown()


def test_a_full_queue_drops_counts_and_reports_the_drops(caplog):
    gate = threading.Event()
    sink = Sink(gate)
    reported: list[int] = []
    writer = BatchWriter("t", sink, max_queue=4, max_batch=2, interval_s=0.01, on_drop=reported.append)
    writer.submit("a"), writer.submit("b")
    assert sink.started.wait(5)  # the writer holds [a, b]; the queue is empty again
    with caplog.at_level(logging.WARNING, logger="agents.batch_writer"):
        accepted = [writer.submit(n) for n in range(7)]
    assert accepted == [True] * 4 + [False] * 3
    assert writer.stats()["dropped"] == 3
    assert [r.getMessage() for r in caplog.records] == [
        "t: queue full (4 items) or closed, 1 item(s) dropped so far"]
    gate.set()
    assert writer.flush(timeout=5)
    assert sink.items == ["a", "b", 0, 1, 2, 3]
    assert reported == [3]
    writer.shutdown()


def test_a_failing_write_is_logged_as_an_error_counted_and_handed_over(caplog):
    sink = Sink(fail_on={"bad"})
    failures: list[tuple[list, str]] = []
    writer = BatchWriter("ledger", sink, max_batch=2, interval_s=0.01,
                         on_failure=lambda items, error: failures.append((items, str(error))))
    with caplog.at_level(logging.ERROR, logger="agents.batch_writer"):
        for item in ("ok-1", "ok-2", "bad", "ok-3", "ok-4"):
            writer.submit(item)
        assert writer.flush(timeout=5)
    assert sink.items == ["ok-1", "ok-2", "ok-4"]
    assert failures == [(["bad", "ok-3"], "database is down")]
    stats = writer.stats()
    assert (stats["written"], stats["failed"], stats["failedBatches"], stats["lastError"]) == (
        3, 2, 1, "RuntimeError: database is down")
    [record] = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert record.getMessage() == "ledger: writing a batch of 2 item(s) failed"
    assert record.exc_info is not None and "database is down" in str(record.exc_info[1])
    writer.shutdown()


def test_a_failing_hook_is_logged_and_the_writer_goes_on(caplog):
    def hook(items, error):
        raise ValueError("hook broke")

    sink = Sink(fail_on={"bad"})
    writer = BatchWriter("t", sink, max_batch=1, interval_s=0.01, on_failure=hook)
    with caplog.at_level(logging.ERROR, logger="agents.batch_writer"):
        writer.submit("bad"), writer.submit("good")
        assert writer.flush(timeout=5)
    assert sink.items == ["good"]
    assert "t: hook failed" in [r.getMessage() for r in caplog.records]
    writer.shutdown()


def test_submit_from_many_threads_loses_nothing():
    sink = Sink()
    writer = BatchWriter("t", sink, max_queue=100_000, max_batch=64, interval_s=0.005)

    def produce(base: int) -> None:
        for n in range(2000):
            writer.submit(base + n)

    threads = [threading.Thread(target=produce, args=(k * 10_000,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert writer.shutdown(timeout=30)
    assert sorted(sink.items) == sorted(k * 10_000 + n for k in range(4) for n in range(2000))


def test_bad_sizes_are_refused():
    with pytest.raises(ValueError):
        BatchWriter("t", Sink(), max_queue=0)
    with pytest.raises(ValueError):
        BatchWriter("t", Sink(), interval_s=0)


def test_on_idle_is_called_when_a_batch_leaves_the_queue_empty_and_when_the_thread_stops():
    """Batches that follow one another (items waiting as the last is written) keep what the
    writer holds open; ``on_idle`` comes once the queue is empty, before a flush returns."""
    events: list = []
    gate = threading.Event()
    sink = Sink(gate)
    writer = BatchWriter("t", lambda items: (sink(items), events.append(("write", list(items)))),
                         max_batch=2, interval_s=3600, on_idle=lambda: events.append(("idle",)))
    writer.submit(1)
    writer.submit(2)  # a full batch: taken at once, held at the gate
    assert sink.started.wait(5)
    for n in (3, 4, 5):
        writer.submit(n)
    gate.set()
    assert writer.flush(timeout=5)
    assert events == [("write", [1, 2]), ("write", [3, 4]), ("write", [5]), ("idle",)]
    writer.submit(6)
    assert writer.flush(timeout=5)
    assert events[4:] == [("write", [6]), ("idle",)]
    assert writer.shutdown(timeout=5)
    assert events[6:] == [("idle",)]  # the thread's end


def test_a_failing_on_idle_is_logged_and_the_writer_goes_on(caplog):
    sink = Sink()

    def broken():
        raise RuntimeError("cannot close")

    writer = BatchWriter("t", sink, max_batch=10, interval_s=3600, on_idle=broken)
    with caplog.at_level(logging.ERROR, logger="agents.batch_writer"):
        writer.submit(1)
        assert writer.flush(timeout=5)
        writer.submit(2)
        assert writer.flush(timeout=5)
    assert sink.items == [1, 2]
    assert [r.getMessage() for r in caplog.records] == ["t: broken failed"] * 2
    writer.shutdown()
