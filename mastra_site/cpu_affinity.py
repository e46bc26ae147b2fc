"""A web process on one CPU (``MASTRA_CPU_AFFINITY``).

A serving process runs Python on one core at a time anyway (the GIL), yet it hands work between
its threads all the time: every database call goes from the event loop to a worker thread and
back, and the trace and ledger writers wake on their own threads. When the kernel spreads those
threads over several cores, each hand-off wakes a thread on another core; on a virtual machine
that costs tens of microseconds per wake-up (measured here: a thread round trip takes 65 µs across
two cores, 5 µs on one). Kept on one core, the same process answered 60 % more sends a second
(``bench/http_api.py``, docs/deployment.md#sizing). Several web processes then share the machine's
cores one each, as the deployment layout has them.

``MASTRA_CPU_AFFINITY`` (read when the ASGI application is built, so it applies to web processes
only, not to Celery's workers and their pools):

- empty (the default): the process stays where the kernel puts it;
- ``auto``: one CPU of those the process may use, each taken by one web process at a time: a
  process claims the highest-numbered CPU no other process holds (by binding an abstract Unix
  socket named after it, released by the kernel when the process ends, whatever the end; it works
  through systemd's ``PrivateTmp``). The highest first because CPU 0 is where a machine's
  housekeeping tends to run (device interrupts, kernel threads): measured on this project's 2-vCPU
  machine, ``generate`` took 0.27 ms on CPU 0 and 0.18 ms on CPU 1. With more processes than
  CPUs, the others share them by process id;
- a CPU list as ``taskset`` takes it (``1``, ``0,2``, ``0-3``): the process runs on those CPUs.

The setting applies to every thread the process has then, and to those it starts later (a new
thread inherits its creator's CPUs). Anything else is refused (``ImproperlyConfigured``) when the
application is built.
"""

from __future__ import annotations

import os
import socket

from django.core.exceptions import ImproperlyConfigured

SETTING = "MASTRA_CPU_AFFINITY"
#: the abstract socket a process binds to claim a CPU (``auto``), formatted with the CPU's number
CLAIM_NAME = "\0mastra-django-cpu-{}"

# the claim's socket lives as long as the process: the kernel drops it (and the claim) at its end
_claim: socket.socket | None = None
_claimed_cpu: int | None = None


def parse_cpus(value: str) -> set[int]:
    """The CPUs of a list in ``taskset``'s form (``"0-2,5"``); ``ImproperlyConfigured`` otherwise."""
    cpus: set[int] = set()
    try:
        for part in value.split(","):
            first, dash, last = part.strip().partition("-")
            low = int(first)
            high = int(last) if dash else low
            if low < 0 or high < low:
                raise ValueError(part)
            cpus.update(range(low, high + 1))
    except ValueError:
        raise ImproperlyConfigured(f"{SETTING} must be empty, 'auto' or a list of CPUs such as 1, 0,2 or 0-3, "
                                   f"not {value!r}") from None
    return cpus


def claim_cpu(allowed: list[int]) -> int:
    """The highest of ``allowed`` no other process has claimed, now claimed by this one (a process
    that claimed one keeps it); when every one is claimed, one of them by process id."""
    global _claim, _claimed_cpu
    if _claimed_cpu is not None and _claimed_cpu in allowed:
        return _claimed_cpu
    for cpu in sorted(allowed, reverse=True):
        claim = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            claim.bind(CLAIM_NAME.format(cpu))
        except OSError:  # held by another process
            claim.close()
            continue
        if _claim is not None:
            _claim.close()
        _claim, _claimed_cpu = claim, cpu
        return cpu
    return sorted(allowed)[os.getpid() % len(allowed)]


def pin(cpus: set[int]) -> None:
    """Run every thread of this process on ``cpus`` (new threads inherit it from their creator)."""
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except ProcessLookupError:  # a thread that ended meanwhile
            pass


def apply_cpu_affinity(value: str | None = None) -> set[int] | None:
    """Apply ``value`` (the setting when None); returns the CPUs the process now runs on, or None
    when it was left alone (empty, or a system without CPU affinity)."""
    if value is None:
        from django.conf import settings
        value = settings.MASTRA_CPU_AFFINITY
    value = value.strip()
    if not value:
        return None
    cpus = None if value == "auto" else parse_cpus(value)
    if not hasattr(os, "sched_setaffinity"):
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if cpus is None:
        cpus = {claim_cpu(allowed)}
    elif not cpus & set(allowed):
        raise ImproperlyConfigured(f"{SETTING}={value!r}: this process may only run on CPUs "
                                   f"{','.join(map(str, allowed))}")
    else:
        cpus &= set(allowed)
    pin(cpus)
    return cpus


__all__ = ["apply_cpu_affinity", "claim_cpu", "parse_cpus", "pin"]
