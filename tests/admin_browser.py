"""Headless Chromium on the admin of a live test server: a page fixture and the sign-in step
(the admin's browser tests of the inbox and the runs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.chat.browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS


@pytest.fixture
def admin_page(monkeypatch):
    """A Chromium page at 1280×900 (Playwright's sync API; the test's own ORM calls stay sync)."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    playwright = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        yield page
        browser.close()


def admin_sign_in(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_selector("#content-main")


def screenshot(page, name: str) -> Path:
    path = SCREENSHOTS / name
    page.screenshot(path=str(path), full_page=True)
    return path


__all__ = ["SCREENSHOTS", "admin_page", "admin_sign_in", "screenshot"]
