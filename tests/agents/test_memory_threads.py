"""The memory thread API contract (``tests/runtime/memory_contract.py``) on the Django ``Memory``:
the services of the HTTP memory routes, on the test database."""

import pytest

from agents.memory import Memory
from tests.runtime.memory_contract import MemoryThreadContract


@pytest.mark.django_db(transaction=True)
class TestDjangoMemory(MemoryThreadContract):
    def make_memory(self, **options):
        return Memory(**options)
