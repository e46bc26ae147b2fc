"""The ``ThreadStore`` contract on :class:`InMemoryThreadStore` (no database)."""

from agents.runtime.threads import InMemoryThreadStore
from tests.runtime.threads.store_contract import ThreadStoreContract


class TestInMemoryThreadStore(ThreadStoreContract):
    def make_store(self):
        return InMemoryThreadStore()

    async def make_thread(self, store, resource_id: str, thread_id: str) -> None:
        store.thread_create(resource_id=resource_id, thread_id=thread_id)

    async def expire(self, store, key: str) -> None:
        store.leases[key]["expires_at"] = store.clock() - 1
