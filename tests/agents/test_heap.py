"""The objects a process loads to start are frozen out of the garbage collector's full collections
(``agents.heap``): a serving process's event loop no longer stops to walk them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import gc, json
cpython = gc.get_threshold()
import django
django.setup()
after_setup = gc.get_freeze_count()
import mastra_site.asgi
frozen = gc.get_freeze_count()
garbage = [[] for _ in range(1000)]
for item in garbage:
    item.append(item)  # cycles made after the start: still the collector's
del garbage, item
collected = gc.collect()
print(json.dumps({"after_setup": after_setup, "frozen": frozen, "collected": collected,
                  "tracked": len(gc.get_objects()), "threshold": gc.get_threshold(),
                  "cpython": cpython}))
"""


def probe(**env: str) -> dict:
    clean = {k: v for k, v in os.environ.items()
             if k not in ("DATABASE_URL", "MASTRA_GC_FREEZE", "MASTRA_GC_YOUNG_OBJECTS", "MASTRA_GC_FULL_EVERY")}
    clean.update(DJANGO_SETTINGS_MODULE="mastra_site.settings", PYTHONPATH=str(ROOT), **env)
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=clean, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_loaded_application_is_frozen_and_later_garbage_still_collected():
    got = probe()
    assert got["after_setup"] > 10_000  # django.setup(): every process, scripts included
    assert got["frozen"] > got["after_setup"]  # the ASGI application adds channels, twisted, the API
    assert got["collected"] >= 1000  # the cycles made afterwards
    assert got["tracked"] < got["frozen"] / 4  # what a full collection walks now


def test_freezing_can_be_turned_off():
    got = probe(MASTRA_GC_FREEZE="false")
    assert got["after_setup"] == got["frozen"] == 0
    assert got["collected"] >= 1000
    assert got["tracked"] > 50_000


def test_a_serving_process_collects_its_young_generation_every_5000_objects():
    """CPython's 700 promotes a step's short-lived objects to the old generation, whose full
    collections stop the event loop: the ASGI application sizes the youngest generation (the
    other two thresholds stay CPython's)."""
    got = probe(MASTRA_GC_FULL_EVERY="0")
    assert got["threshold"] == [5000, *got["cpython"][1:]]
    assert probe(MASTRA_GC_YOUNG_OBJECTS="20000")["threshold"][0] == 20000
    got = probe(MASTRA_GC_YOUNG_OBJECTS="0", MASTRA_GC_FULL_EVERY="0")
    assert got["threshold"] == got["cpython"]  # CPython's own


def test_a_serving_process_makes_a_full_collection_after_100_middle_ones_at_the_earliest():
    """CPython's 10 does not count the frozen heap: a full collection of the runs in flight came
    every few seconds under load. The middle threshold stays CPython's."""
    got = probe()
    assert got["threshold"] == [5000, got["cpython"][1], 100]
    assert probe(MASTRA_GC_FULL_EVERY="1000")["threshold"][2] == 1000
    assert probe(MASTRA_GC_FULL_EVERY="0")["threshold"][2] == got["cpython"][2]
