"""Helpers for the tests of the background writers (``agents.batch_writer``): the database
connections a writer's thread opens, and a writer held in its first batch."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from django.db.backends.signals import connection_created


@contextmanager
def connections_opened(writer):
    """A list of the connections the writer's thread opens meanwhile (one entry per opening)."""
    opened: list = []

    def created(sender, connection, **kwargs):
        if threading.current_thread() is writer._thread:
            opened.append(connection)

    connection_created.connect(created)
    try:
        yield opened
    finally:
        connection_created.disconnect(created)


def held_one_at_a_time(writer, monkeypatch) -> tuple[threading.Event, threading.Event]:
    """Make ``writer`` write one item a batch and hold its batches until ``gate`` is set; ``held``
    is set once the first batch waits there (what is submitted then queues behind it)."""
    gate, held = threading.Event(), threading.Event()
    write = writer.write

    def gated(items):
        held.set()
        assert gate.wait(10)
        return write(items)

    monkeypatch.setattr(writer, "write", gated)
    monkeypatch.setattr(writer, "max_batch", 1)
    return gate, held
