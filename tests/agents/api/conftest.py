"""Personas and a client for the HTTP API tests: alice and bob (users), ops (staff) and an anonymous
caller, each with the agents of ``tests.agents.api.site``."""

from __future__ import annotations

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient


SITE = "tests.agents.api.site:mastra"


@pytest.fixture(autouse=True)
def _api_site(api_site, settled_runs):
    """Every test here runs on ``tests.agents.api.site`` (tests/conftest.py)."""


class Api:
    """An ``AsyncClient`` that sends JSON and a token (or nothing, for the anonymous persona)."""

    def __init__(self, token: str | None, scheme: str = "Token"):
        self.client = AsyncClient()
        self.headers = {"Authorization": f"{scheme} {token}"} if token else {}

    async def get(self, path: str, **query):
        return await self.client.get(path, query, headers=self.headers)

    async def post(self, path: str, body=None, *, raw: bytes | None = None, headers: dict | None = None):
        data = raw if raw is not None else json.dumps(body if body is not None else {})
        return await self.client.post(path, data, content_type="application/json",
                                      headers={**self.headers, **(headers or {})})

    async def patch(self, path: str, body=None):
        return await self.client.patch(path, json.dumps(body or {}), content_type="application/json",
                                       headers=self.headers)

    async def delete(self, path: str):
        return await self.client.delete(path, headers=self.headers)


@sync_to_async
def make_user(name: str, *, staff: bool = False) -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    user = get_user_model().objects.create_user(name, password="pw", is_staff=staff)
    return Token.objects.create(user=user).key


@pytest.fixture
async def alice(transactional_db) -> Api:
    return Api(await make_user("alice"))


@pytest.fixture
async def bob(transactional_db) -> Api:
    return Api(await make_user("bob"))


@pytest.fixture
async def ops(transactional_db) -> Api:
    return Api(await make_user("ops", staff=True))


@pytest.fixture
def anonymous(transactional_db) -> Api:
    return Api(None)


def body(response) -> dict:
    return json.loads(response.content)


async def sse_chunks(response, *, until=None, limit: int = 500) -> tuple[bytes, list]:
    """Read an SSE response: (every byte read, the JSON of each ``data:`` event). Stops after the
    event that ``until(chunk)`` accepts, or at the end of the stream."""
    raw, buffer, chunks = b"", b"", []
    iterator = response.streaming_content.__aiter__()
    while len(chunks) < limit:
        try:
            piece = await asyncio.wait_for(iterator.__anext__(), 5.0)
        except StopAsyncIteration:
            break
        raw += piece
        buffer += piece
        while b"\n\n" in buffer:
            block, buffer = buffer.split(b"\n\n", 1)
            if block.startswith(b"data: ") and block != b"data: [DONE]":
                chunks.append(json.loads(block[6:]))
                if until is not None and until(chunks[-1]):
                    await iterator.aclose()
                    return raw, chunks
    await iterator.aclose()
    return raw, chunks
