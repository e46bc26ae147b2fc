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
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import sys
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


def machine() -> dict:
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return {"case": "machine", "python": platform.python_version(), "executable": sys.executable,
            "cpu": cpu_model(), "cpus": os.cpu_count(), "cpus_allowed": allowed, "loop_us": loop_us(),
            "handoff_us": handoff_us()}


def print_machine() -> None:
    print(json.dumps(machine()), flush=True)


if __name__ == "__main__":
    print_machine()
