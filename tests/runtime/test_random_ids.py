"""The runtime's random ids: version 4 UUIDs and hex ids from a pool of random bytes that a forked
child never shares with its parent."""

import os
import uuid

from agents.runtime.messages import new_id
from agents.runtime.random_ids import POOL_BYTES, random_hex, uuid4_str
from agents.runtime.tracing.spans import new_span_id, new_trace_id


def test_ids_are_version_4_uuids_and_hex_of_their_length():
    ids = [new_id() for _ in range(POOL_BYTES // 8)]  # several pools
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 4 and uuid.UUID(i).variant == uuid.RFC_4122 and str(uuid.UUID(i)) == i
               for i in ids)
    assert len(new_trace_id()) == 32 and len(new_span_id()) == 16 and int(new_trace_id(), 16) >= 0
    assert new_id("run_").startswith("run_") and len(new_id("run_")) == 4 + 32


def test_a_forked_child_does_not_repeat_its_parents_ids():
    random_hex(1)  # the parent's pool holds bytes not handed out yet
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next ids, then out
        os.write(write, ",".join(uuid4_str() for _ in range(8)).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 4096).decode().split(",")
    os.close(read)
    parent = [uuid4_str() for _ in range(8)]
    assert len(child) == 8 and not set(child) & set(parent)


def test_threads_making_ids_at_once_never_share_one():
    import threading

    made: list[list[str]] = [[] for _ in range(8)]
    start = threading.Barrier(8)

    def make(out: list[str]) -> None:
        start.wait()
        out.extend(uuid4_str() for _ in range(POOL_BYTES // 4))  # several pools each

    threads = [threading.Thread(target=make, args=(out,)) for out in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for out in made for i in out]
    assert len(every) == 8 * (POOL_BYTES // 4) and len(set(every)) == len(every)
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in every)
