"""The chat page end to end: a real daphne process on the test database, headless Chromium.

Creating the first account, logging in, a streamed answer, reloading mid-stream (the stream goes on,
nothing twice), stopping a run, approving a tool call, a notification card and the panel, a queued
input with cancel, HTML shown as text. Screenshots at 1280 and 360 px go to test-output/screenshots/.
"""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from tests.chat.browser import chromium, daphne_server, orm, screenshot

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a-long-secret-9"
#: slow enough to watch (and stop, and reload during) a run: 4 characters every 60 ms
SLOW = {"MASTRA_TEST_ECHO_DELAY_MS": "60", "MASTRA_TEST_ECHO_CHUNK": "4"}
LONG = "\n".join(f"line {n} of a long answer" for n in range(1, 9))
LONG_ECHO = "\n".join(f"echo: line {n} of a long answer" for n in range(1, 9))


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path) as context:
        yield context


def sign_in(page, base: str, username: str = "ann") -> None:
    page.goto(base + "/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#conn-status[data-state=connected]")


def pick_bot(page) -> None:
    page.select_option("#agent-select", "chat-bot")
    page.wait_for_selector("#conn-status[data-state=connected]")


def say(page, text: str, *, queue: bool = False) -> None:
    page.fill("#composer", text)
    if queue:
        page.click("#queue-send")
    else:
        page.press("#composer", "Enter")


#: the test's handle on the page's websockets (to drop one as a network failure would)
KEEP_SOCKETS = """
window.testSockets = [];
const PageSocket = window.WebSocket;
window.WebSocket = function (url, protocols) {
  const socket = new PageSocket(url, protocols);
  window.testSockets.push(socket);
  return socket;
};
window.WebSocket.prototype = PageSocket.prototype;
Object.assign(window.WebSocket, {CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3});
"""


def assistant_texts(page) -> list[str]:
    return page.locator(".msg-assistant .md").all_inner_texts()


def wait_idle(page) -> None:
    """Until no run is active and the last answer stopped growing (a run between two chunks
    shows the indicator; a finished one hides it)."""
    page.wait_for_selector("#running", state="hidden", timeout=20_000)


def wait_text(page, index: int, text: str, timeout: float = 20_000) -> None:
    """Until the ``index``-th assistant text (negative from the end) is ``text``."""
    page.wait_for_function("([i, t]) => { const m = [...document.querySelectorAll('.msg-assistant .md')]; "
                           "const e = m[i < 0 ? m.length + i : i]; return e && e.innerText === t; }",
                           arg=[index, text], timeout=timeout)


def store_signals(resource_id: str, thread_id: str, signals: list[dict]) -> None:
    """Write inputs into a thread's history as if another channel had sent them."""
    from agents.runtime.signal import create_signal, render_signal
    from agents.store import messages_save

    messages_save(resource_id=resource_id, thread_id=thread_id,
                  messages=[render_signal(create_signal(signal)) for signal in signals])


def test_first_account_login_stream_and_reload_mid_stream(db_url_for_subprocess, tmp_path, browser):
    with daphne_server(db_url_for_subprocess, tmp_path, **SLOW) as base:
        page = browser.new_page()
        page.add_init_script(KEEP_SOCKETS)
        page.goto(base + "/")
        assert page.url == base + "/login/?next=/"
        page.click("#setup-link")
        page.fill("#id_username", "root")
        page.fill("#id_password1", PASSWORD)
        page.fill("#id_password2", PASSWORD)
        page.click("#setup-form button[type=submit]")
        page.wait_for_selector("#conn-status[data-state=connected]")
        root = orm(lambda: get_user_model().objects.get())
        assert (root.username, root.is_superuser) == ("root", True)

        # log out, and the offer of a first account is gone
        page.click("#logout")
        page.wait_for_url(base + "/login/")
        assert page.locator("#setup-link").count() == 0
        sign_in(page, base, "root")
        pick_bot(page)

        # Shift+Enter is a new line, Enter sends
        page.fill("#composer", "first")
        page.press("#composer", "Shift+Enter")
        page.type("#composer", "second")
        assert page.input_value("#composer") == "first\nsecond"
        page.press("#composer", "Enter")
        wait_text(page, 0, "echo: first\necho: second")
        wait_idle(page)
        assert assistant_texts(page) == ["echo: first\necho: second"]
        assert page.locator(".msg-user .plain").all_inner_texts() == ["first\nsecond"]

        # a long answer streams: partial text first, then all of it
        say(page, LONG)
        page.wait_for_selector("#running:not([hidden])")
        page.wait_for_function("() => { const m = document.querySelectorAll('.msg-assistant .md'); "
                               "return m.length === 2 && m[1].innerText.includes('line 2'); }")
        partial = assistant_texts(page)[1]
        assert LONG_ECHO.startswith(partial) and partial != LONG_ECHO
        screenshot(page, "chat-streaming-1280")

        # reload in the middle: the page catches up and the stream goes on, nothing twice
        page.reload()
        page.wait_for_selector("#conn-status[data-state=connected]")
        assert page.is_visible("#running")
        wait_text(page, 1, LONG_ECHO)
        wait_idle(page)
        assert assistant_texts(page) == ["echo: first\necho: second", LONG_ECHO]
        assert page.locator(".msg-user").count() == 2
        assert page.locator("[data-run-id]").count() == 1  # the one run that was live when we reloaded

        # the connection drops mid-stream: the page reconnects with its last seq and the answer
        # goes on where it was, nothing lost, nothing twice
        say(page, "again\n" + LONG)
        page.wait_for_function("() => { const m = document.querySelectorAll('.msg-assistant .md'); "
                               "return m.length === 3 && m[2].innerText.includes('line 1'); }")
        sockets = page.evaluate("window.testSockets.length")
        page.evaluate("window.testSockets[window.testSockets.length - 1].close()")
        page.wait_for_function("n => window.testSockets.length > n", arg=sockets, timeout=10_000)
        assert re.search(r"\?lastSeq=\d+$", page.evaluate("window.testSockets[window.testSockets.length - 1].url"))
        page.wait_for_selector("#conn-status[data-state=connected]")
        wait_text(page, 2, "echo: again\n" + LONG_ECHO)
        wait_idle(page)
        assert len(assistant_texts(page)) == 3 and page.locator(".msg-user").count() == 3

        # the thread is listed; a search finds it by id, a miss finds nothing
        page.wait_for_selector(".thread-item.current")
        page.fill("#thread-search", "no-such-thread")
        page.wait_for_selector(".thread-list .empty")
        page.fill("#thread-search", "")
        page.wait_for_selector(".thread-item")

        screenshot(page, "chat-1280")
        page.set_viewport_size({"width": 360, "height": 740})
        page.wait_for_timeout(300)  # the thread drawer slides away
        screenshot(page, "chat-360")
        page.click("#menu-toggle")
        page.wait_for_timeout(300)
        screenshot(page, "chat-360-threads")


def test_stop_approve_notify_queue_and_html_as_text(db_url_for_subprocess, tmp_path, browser):
    orm(lambda: get_user_model().objects.create_user("ann", password=PASSWORD))
    with daphne_server(db_url_for_subprocess, tmp_path, **SLOW) as base:
        page = browser.new_page()
        sign_in(page, base)
        pick_bot(page)

        # Esc stops a running answer
        say(page, LONG)
        page.wait_for_function("() => document.querySelector('.msg-assistant .md')?.innerText.includes('line 1')")
        page.press("#composer", "Escape")
        page.wait_for_selector(".run-note:has-text('Stopped')")
        page.wait_for_selector("#running", state="hidden")
        assert assistant_texts(page)[0] != LONG_ECHO

        # a queued input shows in the queue, with cancel; another one runs after the answer
        say(page, LONG)
        page.wait_for_selector("#running:not([hidden])")
        say(page, "cancel me", queue=True)
        say(page, "run me later", queue=True)
        page.wait_for_selector("#queue-list li:nth-child(2)")
        assert page.locator("#queue-list .queued-text").all_inner_texts() == ["cancel me", "run me later"]
        screenshot(page, "chat-queue-1280")
        page.click("#queue-list li:first-child button")
        page.wait_for_function("document.querySelectorAll('#queue-list li').length === 1")
        page.wait_for_selector("#queue", state="hidden", timeout=20_000)  # taken by its run
        wait_text(page, -1, "echo: run me later")
        wait_idle(page)
        assert "cancel me" not in page.inner_text("#transcript")

        # a tool that needs approval: the card, then the tool runs and the answer goes on
        say(page, '/tool delete-file {"path": "/tmp/e2e"}')
        page.wait_for_selector(".approval")
        assert "/tmp/e2e" in page.inner_text(".approval pre")
        page.wait_for_selector("#running-label:has-text('Waiting for approval')")
        screenshot(page, "chat-approval-1280")
        # reloaded while it waits: the snapshot's approval, then the run's chunks bring its tool card
        # and the approval sits under it, once
        page.reload()
        page.wait_for_selector("#conn-status[data-state=connected]")
        page.wait_for_selector(".msg-assistant .tool + .approval")
        assert page.locator(".approval").count() == 1 and page.locator(".tool").count() == 1
        assert page.inner_text("#running-label") == "Waiting for approval…"
        page.click(".approval button.approve")
        page.wait_for_selector(".approval", state="detached")
        page.wait_for_selector(".tool .tool-status:has-text('done')")
        wait_text(page, -1, 'echo: tool delete-file returned {"deleted": "/tmp/e2e"}')
        wait_idle(page)
        page.click(".tool summary")
        assert '"deleted": "/tmp/e2e"' in page.inner_text(".tool .tool-result")

        # a notification filed during a run: its card in the conversation and the panel
        say(page, '/tool notify {"summary": "CI failed on main"}')
        card = page.wait_for_selector(".card.notification")
        assert "CI failed on main" in card.inner_text()
        assert "urgent" in card.inner_text().lower()
        wait_idle(page)
        page.wait_for_selector("#notif-count:not([hidden])")
        page.click("#notif-toggle")
        record = page.wait_for_selector(".notif")
        assert "CI failed on main" in record.inner_text()
        screenshot(page, "chat-notifications-1280")
        page.click(".notif .notif-read")
        page.wait_for_selector(".notif .notif-status:has-text('seen')")
        page.wait_for_selector("#notif-count", state="hidden")
        page.click(".notif .notif-dismiss")
        page.wait_for_selector("#notif-list .empty")
        page.click("#notif-close")

        # HTML and script in a message are shown as text, never run
        attack = '<img src=x onerror="window.owned=1"><script>window.owned=2</script>'
        say(page, attack)
        wait_text(page, -1, "echo: " + attack)
        wait_idle(page)
        assert page.locator(".msg-user .plain").last.inner_text() == attack
        assert page.evaluate("window.owned === undefined")
        assert page.locator("#transcript img, #transcript script").count() == 0

        # inputs from elsewhere, rendered by kind: a Slack user with their name and platform, a
        # system reminder hidden until the toggle shows it
        thread_id = re.search(r"/threads/([^/]+)$", page.url).group(1)
        orm(lambda: store_signals("ann", thread_id, [
            {"type": "user", "contents": "from the channel", "attributes": {"sender": "Bea <b>", "platform": "slack"}},
            {"type": "reactive", "contents": "remember the runbook"}]))
        page.reload()
        page.wait_for_selector("#conn-status[data-state=connected]")
        label = page.locator(".msg-user", has_text="from the channel").locator(".msg-label")
        assert label.inner_text() == "Bea <b> · slack"
        reminder = page.locator(".reminder", has_text="remember the runbook")
        assert reminder.count() == 1 and not reminder.is_visible()
        page.check("#show-reminders")
        assert reminder.is_visible()
        assert reminder.locator(".reminder-tag").inner_text() == "system-reminder"

        # dark mode at 360 px
        page.emulate_media(color_scheme="dark")
        page.set_viewport_size({"width": 360, "height": 740})
        page.wait_for_timeout(300)  # the thread drawer slides away
        screenshot(page, "chat-dark-360")
        page.set_viewport_size({"width": 1280, "height": 800})
        screenshot(page, "chat-dark-1280")
        assert re.match(r"rgb\((\d+), (\d+), (\d+)\)", page.evaluate("getComputedStyle(document.body).backgroundColor"))
