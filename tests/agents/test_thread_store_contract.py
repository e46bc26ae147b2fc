"""The ``ThreadStore`` contract (``tests/runtime/threads/store_contract.py``) on
:class:`~agents.threads.store.DjangoThreadStore` and the test database."""

from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from agents.threads.identity import thread_ref
from agents.models import Thread, ThreadLease
from agents.threads.store import DjangoThreadStore
from tests.runtime.threads.store_contract import ThreadStoreContract


@pytest.mark.django_db(transaction=True)
class TestDjangoThreadStore(ThreadStoreContract):
    def make_store(self):
        return DjangoThreadStore()

    async def make_thread(self, store, resource_id: str, thread_id: str) -> None:
        await sync_to_async(Thread.objects.create)(thread_id=thread_id, resource_id=resource_id)

    async def expire(self, store, key: str) -> None:
        thread_ref(key)
        await sync_to_async(lambda: ThreadLease.objects.filter(thread_id=key).update(
            expires_at=timezone.now() - timedelta(seconds=1)))()


@pytest.mark.django_db(transaction=True)
async def test_each_input_is_rendered_once_on_the_database(monkeypatch):
    from agents.runtime import signal as signal_module
    from agents.threads import inputs as inputs_module
    from tests.agents.thread_harness import bounded, make_agent, settle

    calls = []
    original = signal_module.render_content

    def counting(signal):
        calls.append(signal["contents"])
        return original(signal)

    monkeypatch.setattr(signal_module, "render_content", counting)
    monkeypatch.setattr(inputs_module, "render_content", counting)
    agent = make_agent(gate=0)
    woken = await agent.send_message("first", resource_id="u1", thread_id="t1")
    delivered = await agent.send_message("second", resource_id="u1", thread_id="t1")
    persisted = await agent.send_message("third", resource_id="u1", thread_id="t2", if_idle={"behavior": "persist"})
    assert (woken.action, delivered.action, persisted.action) == ("wake", "deliver", "persist")
    agent.model.open()
    result = await bounded(woken.output.get_full_output())
    # the run answers both: in one step, or in two when "second" came after its first boundary
    assert "\n".join(step.text for step in result.steps) == "echo: first\necho: second"
    await settle()
    assert calls == ["first", "second", "third"]
