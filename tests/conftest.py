"""Shared fixtures. Service-backed tests read REDIS_URL / MASTRA_TEST_POSTGRES_URL; with
MASTRA_REQUIRE_SERVICES=1 (CI) a missing service fails the test instead of skipping it."""

from __future__ import annotations

import os

import pytest


def require_service(name: str, value: str | None) -> str:
    if value:
        return value
    if os.environ.get("MASTRA_REQUIRE_SERVICES") == "1":
        pytest.fail(f"{name} is not set but MASTRA_REQUIRE_SERVICES=1")
    pytest.skip(f"{name} is not set (run with the services up; CI sets MASTRA_REQUIRE_SERVICES=1)")


@pytest.fixture
def redis_url() -> str:
    return require_service("REDIS_URL", os.environ.get("REDIS_URL"))
