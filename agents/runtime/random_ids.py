"""Random ids for the runtime's own records (run, message, trace and span ids) with few system calls.

Every id is cryptographically random (``os.urandom``), but the bytes are read 4 KiB at a time and
handed out from that pool, instead of one ``getrandom`` system call per id: a run makes about seven
ids, and on a busy host each system call is a chance for the process to lose its CPU. A forked child
starts with an empty pool, so that two processes never hand out the same bytes.
"""

from __future__ import annotations

import os
import threading

POOL_BYTES = 4096

_lock = threading.Lock()
_pool = b""
_pos = 0


def _reset_after_fork() -> None:
    global _pool, _pos, _lock
    _lock = threading.Lock()
    _pool, _pos = b"", 0


os.register_at_fork(after_in_child=_reset_after_fork)


def random_bytes(n: int) -> bytes:
    """``n`` (at most :data:`POOL_BYTES`) random bytes from the pool."""
    global _pool, _pos
    with _lock:
        if _pos + n > len(_pool):
            _pool, _pos = os.urandom(POOL_BYTES), 0
        chunk = _pool[_pos:_pos + n]
        _pos += n
    return chunk


def random_hex(n: int) -> str:
    """``n`` random bytes as ``2n`` lowercase hex characters."""
    return random_bytes(n).hex()


def uuid4_hex() -> str:
    """A version 4 UUID as 32 hex characters (``uuid.uuid4().hex``)."""
    raw = bytearray(random_bytes(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    return raw.hex()


def uuid4_str() -> str:
    """A version 4 UUID in its canonical form (``str(uuid.uuid4())``)."""
    h = uuid4_hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


__all__ = ["POOL_BYTES", "random_bytes", "random_hex", "uuid4_hex", "uuid4_str"]
