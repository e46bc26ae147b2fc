"""What a piece of code leaves to the garbage collector: objects no longer reachable but kept alive
by a reference cycle, which a serving process frees only when a collection of their generation comes
(for a long request or a run, often a full one, ``agents.heap``)."""

from __future__ import annotations

import gc
from contextlib import contextmanager
from typing import Iterator


@contextmanager
def cyclic_garbage() -> Iterator[list]:
    """Collect first, then run the block with the collector off; the list it yields is filled, when
    the block ends, with the objects the block left in reference cycles (``gc.DEBUG_SAVEALL``)."""
    found: list = []
    gc.collect()
    gc.disable()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield found
        gc.collect()
        found.extend(gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
