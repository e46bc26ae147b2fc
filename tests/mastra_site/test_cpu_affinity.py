"""``MASTRA_CPU_AFFINITY`` keeps a web process's threads on one CPU (``mastra_site.cpu_affinity``).

Each probe runs in a process of its own (pinning the test runner would pin the rest of the suite),
with a claim name of its own (the abstract sockets ``auto`` binds are shared by every process of
the machine, a real server's included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from mastra_site.cpu_affinity import parse_cpus

ROOT = Path(__file__).resolve().parents[2]
ALLOWED = sorted(os.sched_getaffinity(0))

# applies the setting as the ASGI application does, with threads started before and after it
PROBE = """
import json, os, sys, threading
from mastra_site import cpu_affinity
cpu_affinity.CLAIM_NAME = "\\0" + os.environ["PROBE_CLAIM"] + "-{}"
import django
django.setup()
gate = threading.Event()
before = threading.Thread(target=gate.wait, daemon=True); before.start()
import mastra_site.asgi
after = threading.Thread(target=gate.wait, daemon=True); after.start()

def cpus(tid):
    with open(f"/proc/self/task/{tid}/status") as status:
        line = next(l for l in status if l.startswith("Cpus_allowed_list:"))
    return line.split(":")[1].strip()

print(json.dumps({"main": cpus(threading.get_native_id()), "before": cpus(before.native_id),
                  "after": cpus(after.native_id), "threads": sorted({cpus(t) for t in os.listdir("/proc/self/task")})}),
      flush=True)
sys.stdin.readline()  # hold the claim until told to end
gate.set()
"""


def start_probe(claim: str, value: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "MASTRA_CPU_AFFINITY")}
    env.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), PROBE_CLAIM=claim,
               MASTRA_CPU_AFFINITY=value)
    return subprocess.Popen([sys.executable, "-c", PROBE], cwd=ROOT, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def read_probe(proc: subprocess.Popen) -> dict:
    line = proc.stdout.readline()
    assert line, proc.stderr.read()
    return json.loads(line)


def end_probe(proc: subprocess.Popen) -> None:
    proc.communicate("\n", timeout=60)
    assert proc.returncode == 0


def claim_name() -> str:
    return f"mastra-test-{uuid.uuid4().hex}"


@pytest.mark.parametrize("value, cpus", [("1", {1}), ("0,2", {0, 2}), ("0-3", {0, 1, 2, 3}),
                                          (" 1 , 3-4", {1, 3, 4}), ("5-5", {5})])
def test_a_cpu_list_reads_as_taskset_writes_it(value, cpus):
    assert parse_cpus(value) == cpus


@pytest.mark.parametrize("value", ["abc", "1-", "-1", "3-1", "1,,2", "1.5", "all"])
def test_anything_else_is_refused_with_the_setting_named(value):
    with pytest.raises(ImproperlyConfigured, match=r"MASTRA_CPU_AFFINITY must be empty, 'auto' or a list of CPUs"):
        parse_cpus(value)


def test_a_bad_value_stops_the_process_at_start():
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), MASTRA_CPU_AFFINITY="every")
    proc = subprocess.run([sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "ImproperlyConfigured: MASTRA_CPU_AFFINITY must be empty, 'auto' or a list of CPUs" in proc.stderr


def test_a_cpu_list_pins_every_thread_of_the_web_process():
    cpu = ALLOWED[-1]
    proc = start_probe(claim_name(), str(cpu))
    got = read_probe(proc)
    end_probe(proc)
    # the threads started before the setting was applied, the main one, and one started afterwards
    assert (got["main"], got["before"], got["after"]) == (str(cpu), str(cpu), str(cpu))
    assert got["threads"] == [str(cpu)]


def test_unset_leaves_the_process_where_the_kernel_puts_it():
    proc = start_probe(claim_name(), "")
    got = read_probe(proc)
    end_probe(proc)
    assert got["main"] == got["after"] == parse_list(ALLOWED)


def parse_list(cpus: list[int]) -> str:
    """``cpus`` as the kernel writes them in ``Cpus_allowed_list`` (runs of CPUs as ranges)."""
    runs, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            runs.append(str(start) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(runs)


@pytest.mark.skipif(len(ALLOWED) < 2, reason="two CPUs are needed to see two web processes on different ones")
def test_auto_gives_each_web_process_a_cpu_of_its_own_and_frees_it_at_the_end():
    claim = claim_name()
    first = start_probe(claim, "auto")
    got_first = read_probe(first)
    second = start_probe(claim, "auto")
    got_second = read_probe(second)
    assert got_first["threads"] == [str(ALLOWED[-1])]  # the highest CPU nobody holds (CPU 0 the last)
    assert got_second["threads"] == [str(ALLOWED[-2])]
    end_probe(first)  # its claim ends with it
    third = start_probe(claim, "auto")
    got_third = read_probe(third)
    end_probe(second)
    end_probe(third)
    assert got_third["threads"] == [str(ALLOWED[-1])]


def test_auto_with_every_cpu_claimed_shares_them():
    claim = claim_name()
    holders = [start_probe(claim, "auto") for _ in ALLOWED]
    taken = sorted(read_probe(p)["main"] for p in holders)
    extra = start_probe(claim, "auto")
    got = read_probe(extra)
    for proc in [*holders, extra]:
        end_probe(proc)
    assert taken == sorted(str(cpu) for cpu in ALLOWED)
    assert got["threads"] in ([str(cpu)] for cpu in ALLOWED)  # one CPU, shared with its holder


def test_a_list_outside_the_cpus_the_process_may_use_is_refused():
    outside = max(ALLOWED) + 1
    proc = start_probe(claim_name(), str(outside))
    out, err = proc.communicate("\n", timeout=120)
    assert proc.returncode != 0, out
    assert f"MASTRA_CPU_AFFINITY='{outside}': this process may only run on CPUs {','.join(map(str, ALLOWED))}" in err


def test_auto_applied_again_keeps_the_cpu_the_process_claimed():
    code = ("import os; from mastra_site import cpu_affinity as c; "
            "c.CLAIM_NAME = '\\0' + os.environ['PROBE_CLAIM'] + '-{}'; "
            "print(c.apply_cpu_affinity('auto'), c.apply_cpu_affinity('auto'))")
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), PROBE_CLAIM=claim_name())
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [f"{{{ALLOWED[-1]}}}", f"{{{ALLOWED[-1]}}}"]
