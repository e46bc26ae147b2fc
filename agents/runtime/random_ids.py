"""Random ids for the runtime's own records (run, message, trace and span ids) with few system calls.

Every id is cryptographically random (``os.urandom``), but the bytes are read 4 KiB at a time, kept
as hex text and handed out from that pool, instead of one ``getrandom`` system call per id: a run
makes about seven ids, and on a busy host each system call is a chance for the process to lose its
CPU. Each thread has a pool of its own (no lock to take: an id costs a few string slices), and a
forked child starts with empty pools, so that two processes never hand out the same bytes.
"""

from __future__ import annotations

import os
import threading

POOL_BYTES = 4096

_pools = threading.local()
#: a version 4 UUID's variant digit (``10xx``) for any random hex digit
_VARIANT = {d: "89ab"[int(d, 16) & 3] for d in "0123456789abcdef"}


def _reset_after_fork() -> None:
    global _pools
    _pools = threading.local()


os.register_at_fork(after_in_child=_reset_after_fork)


def _hex(n: int) -> str:
    """``n`` (at most ``2 * POOL_BYTES``) random hex digits from this thread's pool."""
    try:
        state = _pools.state
    except AttributeError:
        state = _pools.state = ["", 0]  # [the pool's hex text, the next digit to hand out]
    text, pos = state
    end = pos + n
    if end > len(text):
        state[0] = text = os.urandom(POOL_BYTES).hex()
        pos, end = 0, n
    state[1] = end
    return text[pos:end]


def random_bytes(n: int) -> bytes:
    """``n`` (at most :data:`POOL_BYTES`) random bytes from the pool."""
    return bytes.fromhex(_hex(2 * n))


def random_hex(n: int) -> str:
    """``n`` random bytes as ``2n`` lowercase hex characters."""
    return _hex(2 * n)


def uuid4_hex() -> str:
    """A version 4 UUID as 32 hex characters (``uuid.uuid4().hex``)."""
    h = _hex(32)
    return f"{h[:12]}4{h[13:16]}{_VARIANT[h[16]]}{h[17:]}"


def uuid4_str() -> str:
    """A version 4 UUID in its canonical form (``str(uuid.uuid4())``)."""
    h = _hex(32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}"


__all__ = ["POOL_BYTES", "random_bytes", "random_hex", "uuid4_hex", "uuid4_str"]
