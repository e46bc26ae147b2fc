"""The memory thread API contract (``memory_contract.py``) on ``InMemoryMemory``."""

from agents.runtime import InMemoryMemory
from tests.runtime.memory_contract import MemoryThreadContract


class TestInMemoryMemory(MemoryThreadContract):
    def make_memory(self, **options):
        return InMemoryMemory(**options)
