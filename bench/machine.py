"""The machine and interpreter a bench ran on, as one JSON line that a bench prints before its cases.

    .venv/bin/python bench/machine.py

A bench's figures depend on both as much as on the code: the same checkout measured on two
machines of the same kind differed by a factor of three, and on one machine by a factor of 1.3 between
a CPython built with pyenv's defaults and Debian's (``docs/deployment.md``, "Sizing"). The line says
which, so that two runs can be compared, or not. Its ``loop_us`` tells interpreters and machines
apart; it does not predict the benches' figures (on one machine the loop took twice as long on one
interpreter as on the other, and the calls the same time within 7 %):

  case          ``machine``
  python        the interpreter's version, and ``executable``: the file it runs from
  cpu           the processor's model name (``/proc/cpuinfo``; None where the system has none)
  cpus          the machine's CPUs, and ``cpus_allowed``: those the bench's own process may run on
                (``bench/agent_overhead.py`` and ``bench/signals.py`` print the line after
                ``MASTRA_CPU_AFFINITY`` pinned them; the servers the other benches start pin
                themselves)
  loop_us       ``sum(range(1000))`` in microseconds on this interpreter, the best of five
                repetitions, as ``python3 -m timeit "sum(range(1000))"`` reports it
  handoff_us    a thread hand-off: from an event loop to a thread of its own and back (the thread
                sets the caller's future with one callback on its loop, as a web process's worker
                thread does for every database call), the median of 2,000 in microseconds, on the
                CPUs of ``cpus_allowed``. It is the kernel's and the virtual machine's price of
                waking a thread, which the loop does not show: on 2 vCPUs of an AMD EPYC
                (2026-12-06, ``loop_us`` 14 to 16) it was 49 to 63 µs on one CPU and 146 to 162
                across both, where the sizing notes measured 5 and 65 µs on an earlier machine of
                the same kind (``docs/deployment.md``, "One CPU per web process"). A chat turn, a
                wake and a ``send-message`` make two or three hand-offs each

:class:`CpuMeter` is what the per-call benches (``bench/agent_overhead.py``, ``bench/signals.py``)
add to each case's line: the process's CPU time per call, and its split between the threads that
spent it (each thread's own CPU clock, ``time.pthread_getcpuclockid``). A wall-clock median on a
shared machine moves by a fifth from one run to the next; the CPU a call costs moves much less, and
the split says which thread to look at. It is also what a sampling profiler of the interpreter
misjudges: py-spy sees a thread that runs SQLite or the kernel with the interpreter released as
idle, and on one machine it gave the worker thread a quarter of a wake's time where its CPU clock
gave it three fifths.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
import threading
import time
import timeit
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def cpu_model() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "model name":
            return value.strip()
    return None


def loop_us(number: int = 2_000, repeat: int = 5) -> float:
    """``sum(range(1000))`` in microseconds, the best of ``repeat`` timings of ``number`` loops."""
    best = min(timeit.repeat("sum(range(1000))", number=number, repeat=repeat))
    return round(best / number * 1e6, 2)


def handoff_us(number: int = 2_000, warmup: int = 200) -> float:
    """The median, in microseconds, of ``number`` round trips from an event loop to a thread of its
    own and back (after ``warmup``)."""

    def answer(loop: asyncio.AbstractEventLoop, future: asyncio.Future) -> None:
        loop.call_soon_threadsafe(future.set_result, None)

    async def trips(executor: ThreadPoolExecutor) -> list[float]:
        loop = asyncio.get_running_loop()
        clock = loop.time
        times = []
        for i in range(warmup + number):
            future = loop.create_future()
            began = clock()
            executor.submit(answer, loop, future)
            await future
            if i >= warmup:
                times.append(clock() - began)
        return times

    with ThreadPoolExecutor(1) as executor:
        return round(statistics.median(asyncio.run(trips(executor))) * 1e6, 1)


class CpuMeter:
    """The CPU time the process spends between :meth:`start` and :meth:`stop`, by thread:
    ``loop`` (the main thread, where the benches run their event loop), ``worker`` (the thread of
    ``worker_ident``: the one the runtime's database calls go to), ``writers`` (the batch writers'
    threads: the ledger's and the traces' rows, ``agents.batch_writer``) and ``other`` (any other
    thread, and threads that ended in between)."""

    def __init__(self, worker_ident: int | None = None):
        self.worker_ident = worker_ident
        self._began: tuple[float, dict[int, tuple[str, float]]] | None = None

    def start(self) -> None:
        self._began = (time.process_time(), self._threads())

    def stop(self, calls: int) -> dict:
        """``cpu_ms`` (the process's CPU per call) and ``cpu_ms_by_thread``, in milliseconds."""
        if self._began is None:
            raise RuntimeError("CpuMeter.stop() before start()")
        process, threads = time.process_time() - self._began[0], self._threads()
        split = dict.fromkeys(("loop", "worker", "writers"), 0.0)
        for ident, (group, spent) in threads.items():
            if group in split:
                split[group] += spent - self._began[1].get(ident, (group, 0.0))[1]
        split["other"] = max(0.0, process - sum(split.values()))
        per_call = 1000 / max(1, calls)
        return {"cpu_ms": round(process * per_call, 4),
                "cpu_ms_by_thread": {group: round(spent * per_call, 4) for group, spent in split.items()}}

    def _threads(self) -> dict[int, tuple[str, float]]:
        out = {}
        main = threading.main_thread().ident
        for thread in threading.enumerate():
            # a thread's CPU clock is read only while it runs (the clock of a thread that has ended
            # is undefined): the benches read it between calls, where their threads all live on
            if thread.ident is None or not thread.is_alive():
                continue
            try:
                spent = time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
            except (OSError, AttributeError):  # the thread ended meanwhile, or no such clock here
                continue
            group = ("loop" if thread.ident == main else "worker" if thread.ident == self.worker_ident
                     else "writers" if thread.name.startswith("batch-writer-") else "other")
            out[thread.ident] = (group, spent)
        return out


def runtime_cpu_meter() -> CpuMeter:
    """A :class:`CpuMeter` that knows the runtime's worker thread (asgiref's thread for
    thread-sensitive calls, ``agents.worker_thread``), started by asking it for its ident."""
    from asgiref.sync import SyncToAsync

    return CpuMeter(SyncToAsync.single_thread_executor.submit(threading.get_ident).result())


def writers_flushed(timeout: float = 30.0) -> None:
    """Wait until the ledger's and the traces' writers have written what they hold, so that a case's
    CPU includes the writing of its calls' rows and none of the last case's."""
    from agents.observability_services import spans_writer
    from ledger.writer import ledger_writer

    for writer in (spans_writer(), ledger_writer()):
        writer.flush(timeout)


def machine() -> dict:
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"case": "machine", "python": platform.python_version(), "executable": sys.executable,
            "cpu": cpu_model(), "cpus": os.cpu_count(), "cpus_allowed": allowed, "loop_us": loop_us(),
            "handoff_us": handoff_us()}


def print_machine() -> None:
    print(json.dumps(machine()), flush=True)


if __name__ == "__main__":
    print_machine()
