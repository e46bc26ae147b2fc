"""The chat page's features in headless Chromium on a real daphne: the picker and the empty thread
(description, example prompts, the offline model's /tool syntax), renaming and deleting threads,
markdown tables and code blocks with their Copy buttons, an answer's figures and Copy, the
notifications panel (badge, time, link to the thread, mark all read, a test notification), tool cards
of runs that reuse tool-call ids, what assistive technology gets (aria-busy while streaming, the
finished answer announced, the closed drawer inert, a visible focus) and axe-core on the chat and
login pages (no serious or critical violation, at 1280 and 360 px, light and dark). Also the demo
site itself (its approval card and its scorer), and the page side of four fixes: a thread id with
``/``, a failed run's entry with Retry after a reload, a refused send that keeps its text, and
answers labelled with their own agent; a composer whose buttons wait for the page's script (text
typed before it runs stays, and is what is sent); a rename or a delete question in the thread list
that stays when the list is drawn again; and the notifications panel keeping the focus in place
when its list is drawn again. Screenshots: ``test-output/screenshots/``."""

from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model

from tests.a11y.axe import assert_accessible
from tests.chat.browser import chromium, daphne_server, orm, screenshot
from tests.chat.site import MARKDOWN_ANSWER

pytestmark = pytest.mark.django_db(transaction=True)

PASSWORD = "a-long-secret-9"
SLOW = {"MASTRA_TEST_ECHO_DELAY_MS": "60", "MASTRA_TEST_ECHO_CHUNK": "4"}
WIDTHS = {1280: {"width": 1280, "height": 800}, 360: {"width": 360, "height": 740}}


@pytest.fixture
def browser(tmp_path):
    with chromium(tmp_path) as context:
        yield context


@pytest.fixture
def page_errors():
    """Script errors of the pages a test opens (a test fails on any)."""
    errors: list[str] = []
    yield errors
    assert errors == []


def new_page(browser, errors):
    page = browser.new_page()
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


def sign_in(page, base: str, username: str = "ann") -> None:
    page.goto(base + "/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_selector("#conn-status[data-state=connected]")


def pick(page, agent_id: str) -> None:
    page.select_option("#agent-select", agent_id)
    page.wait_for_selector("#conn-status[data-state=connected]")


def say(page, text: str) -> None:
    page.fill("#composer", text)
    page.press("#composer", "Enter")


def wait_idle(page) -> None:
    page.wait_for_selector("#running", state="hidden", timeout=20_000)


def wait_answers(page, count: int) -> None:
    page.wait_for_function("n => document.querySelectorAll('.msg-assistant').length >= n", arg=count,
                           timeout=20_000)


def thread_of(page) -> str:
    return page.evaluate("decodeURIComponent(location.hash.split('/threads/')[1])")


def answered(page, text: str) -> str:
    """Says ``text`` in the open thread (its first input), waits for the answer and the run's end;
    returns the thread's id."""
    say(page, text)
    wait_answers(page, 1)
    wait_idle(page)
    return thread_of(page)


def open_new_thread(page, left: str) -> str:
    """**New thread**, once the page has left the thread ``left``; returns the new thread's id."""
    page.click("#new-thread")
    page.wait_for_function("t => decodeURIComponent(location.hash).indexOf(t) < 0", arg=left)
    return thread_of(page)


def width(page, px: int) -> None:
    """The viewport at ``px`` wide, once the drawer's slide (a CSS transition) has ended."""
    page.set_viewport_size(WIDTHS[px])
    page.wait_for_function("() => document.getAnimations().filter(a => a.playState === 'running').length === 0")


def user(name: str = "ann"):
    return orm(lambda: get_user_model().objects.create_user(name, password=PASSWORD))


# -- the demo site -----------------------------------------------------------------------------------
DEMO = {"MASTRA": "mastra_site.mastra:mastra", "MASTRA_DEFAULT_MODEL": "local/echo"}


def test_the_demo_shows_every_agent_its_examples_an_approval_and_a_score(db_url_for_subprocess, tmp_path, browser,
                                                                        page_errors):
    from agents.observability import Score

    user()
    with daphne_server(db_url_for_subprocess, tmp_path, **DEMO) as base:
        page = new_page(browser, page_errors)
        sign_in(page, base)
        # every demo agent is in the picker, and each can be opened
        options = page.eval_on_selector_all("#agent-select option", "os => os.map(o => [o.value, o.textContent, o.disabled])")
        assert options == [["ops-assistant", "Ops Assistant", False], ["policy-bot", "Policy Bot", False],
                           ["support-writer", "Support Writer", False], ["triage-notes", "Triage Notes", False]]
        # the empty thread: the agent's description, its example prompts and the /tool syntax
        page.wait_for_selector(".empty-thread .examples")
        assert page.inner_text(".empty-thread .empty") == "Say hello to Ops Assistant."
        assert page.inner_text(".agent-description") == "Answers operators' questions, does arithmetic and tells the time."
        assert page.locator(".examples .example").all_inner_texts() == [
            '/tool calculate {"expression": "2*(3+4)"}', "/tool current-time",
            '/tool restart-service {"service": "billing-api"}', "What should I check first when the API returns 502s?"]
        assert page.inner_text(".tool-hint") == (
            'With the offline model (local/echo) a line /tool <name> <JSON arguments> calls that tool, e.g. '
            '/tool calculate {"expression": "6*7"}; the arguments may be left out for a tool that takes none.')
        screenshot(page, "demo-empty-thread-1280")
        assert_accessible(page, "the demo's empty thread at 1280 px")
        width(page, 360)
        screenshot(page, "demo-empty-thread-360")
        assert_accessible(page, "the demo's empty thread at 360 px")
        width(page, 1280)
        for agent_id, name in [("policy-bot", "Policy Bot"), ("support-writer", "Support Writer"),
                               ("triage-notes", "Triage Notes")]:
            pick(page, agent_id)
            page.wait_for_function("t => document.querySelector('.empty-thread .empty')?.textContent === t",
                                   arg=f"Say hello to {name}.")
            assert page.locator(".examples .example").count() >= 1
        pick(page, "ops-assistant")

        # an example goes to the composer; the approval card comes from the browser
        page.click(".example:has-text('restart-service')")
        assert page.input_value("#composer") == '/tool restart-service {"service": "billing-api"}'
        page.press("#composer", "Enter")
        page.wait_for_selector(".approval")
        assert page.inner_text(".approval .card-head") == "Approve restart-service?"
        screenshot(page, "demo-approval-1280")
        page.click(".approval button.approve")
        page.wait_for_selector(".tool .tool-status:has-text('done')")
        wait_idle(page)
        page.wait_for_selector(".msg-assistant .figures:not(:empty)")
        run_id = page.get_attribute(".msg-assistant[data-run-id]", "data-run-id")
        # the thread's title is its first message, clean
        page.wait_for_function("() => document.querySelector('.thread-item.current .thread-title')"
                               "?.textContent === 'Tool restart-service'", timeout=20_000)
        screenshot(page, "demo-approved-1280")
        # the run was scored (admin: Scores)
        scores = []
        for _ in range(100):
            scores = orm(lambda: list(Score.objects.filter(run_id=run_id).values_list("scorer_id", "score")))
            if scores:
                break
            page.wait_for_timeout(100)
        assert scores == [("conciseness", 1.0)]


# -- threads, markdown, figures, copy -------------------------------------------------------------------
def test_threads_are_renamed_and_deleted_and_answers_show_tables_code_figures_and_copy(
        db_url_for_subprocess, tmp_path, browser, page_errors):
    from agents.models import Thread

    user()
    with daphne_server(db_url_for_subprocess, tmp_path) as base:
        browser.grant_permissions(["clipboard-read", "clipboard-write"], origin=base)
        page = new_page(browser, page_errors)
        sign_in(page, base)
        pick(page, "writer")
        say(page, "status please")
        wait_answers(page, 1)
        wait_idle(page)
        # a table with its header, its alignments and inline code in a cell
        page.wait_for_selector(".md table")
        assert page.eval_on_selector_all(".md table th", "c => c.map(x => [x.textContent, x.style.textAlign, x.scope])") == [
            ["service", "left", "col"], ["state", "center", "col"], ["p99", "right", "col"]]
        assert page.eval_on_selector_all(".md table tbody tr", "rs => rs.map(r => [...r.cells].map(c => c.textContent))") == [
            ["api", "up", "120 ms"], ["billing", "down", "—"]]
        assert page.locator(".md table tbody code").inner_text() == "down"
        # a code block with its language and a Copy button
        code = "def restart(name):\n    return f\"restarting {name}\""
        assert page.inner_text(".code-block .code-lang") == "python"
        assert page.get_attribute(".code-block .copy-code", "aria-label") == "Copy the python code"
        assert page.inner_text(".code-block pre") == code
        page.click(".code-block .copy-code")
        page.wait_for_selector(".copy-code[data-copied=true]")
        assert page.inner_text(".copy-code") == "Copied"
        assert page.evaluate("navigator.clipboard.readText()") == code
        # the answer's line: tokens and duration, the model on hover, and Copy
        page.wait_for_selector(".msg-assistant .figures:not(:empty)")
        figures = page.inner_text(".msg-assistant .figures")
        assert re.fullmatch(r"37 tokens \(11 in, 26 out\) · \d+ ms", figures), figures
        assert page.get_attribute(".msg-assistant .figures", "title") == "Model: test/markdown"
        assert page.get_attribute(".msg-assistant .msg-label", "title") == "Model: test/markdown"
        page.click(".msg-assistant .copy-answer")
        page.wait_for_selector(".copy-answer[data-copied=true]")
        assert page.evaluate("navigator.clipboard.readText()") == MARKDOWN_ANSWER
        screenshot(page, "chat-markdown-1280")
        # the renderer builds nodes: HTML in a cell or a code block stays text, a pipe may be escaped
        html = page.evaluate("""async () => {
            const md = await import(document.querySelector('link[href*="markdown"]').href);
            const box = document.createElement('div');
            box.appendChild(md.render('| a \\\\| b | c |\\n|---|--:|\\n| <img src=x onerror="window.owned=1"> | **x** |\\n'
                + '| only one |\\n\\n```\\n<script>window.owned=2</script>\\n```'));
            return box.innerHTML;
        }""")
        assert html == (
            '<div class="table-wrap"><table><thead><tr><th scope="col">a | b</th>'
            '<th scope="col" style="text-align: right;">c</th></tr></thead><tbody>'
            '<tr><td>&lt;img src=x onerror="window.owned=1"&gt;</td><td style="text-align: right;"><strong>x</strong></td></tr>'
            '<tr><td>only one</td><td style="text-align: right;"></td></tr></tbody></table></div>'
            '<div class="code-block"><div class="code-head"><span class="code-lang">code</span>'
            '<button class="copy-code" type="button" aria-label="Copy the code">Copy</button></div>'
            '<pre><code>&lt;script&gt;window.owned=2&lt;/script&gt;</code></pre></div>')
        assert page.evaluate("window.owned === undefined")
        page.emulate_media(color_scheme="dark")
        screenshot(page, "chat-markdown-dark-1280")
        assert_accessible(page, "an answer with a table and code, dark, 1280 px")
        page.emulate_media(color_scheme="light")
        # after a reload: the stored answer keeps its figures
        page.reload()
        page.wait_for_selector(".msg-assistant .figures:not(:empty)")
        assert page.inner_text(".msg-assistant .figures") == figures
        first = thread_of(page)

        # a second thread; rename the first from the list (Enter saves, Esc cancels)
        open_new_thread(page, first)
        pick(page, "chat-bot")
        second = answered(page, "second thread")
        page.wait_for_selector(f".thread-item[data-thread-id='{second}']")
        row = f".thread-row[data-thread-id='{first}']"
        assert page.get_attribute(f"{row} .thread-rename", "aria-label") == "Rename status please"
        page.click(f"{row} .thread-rename")
        page.fill(f"{row} .thread-title-input", "Nothing to keep")
        page.press(f"{row} .thread-title-input", "Escape")
        page.wait_for_selector(f"{row} .thread-item .thread-title:has-text('status please')")
        page.click(f"{row} .thread-rename")
        assert page.get_attribute(f"{row} .thread-title-input", "aria-label") == "New title for status please"
        screenshot(page, "chat-thread-rename-1280")
        page.fill(f"{row} .thread-title-input", "  Service   status ")
        page.press(f"{row} .thread-title-input", "Enter")
        page.wait_for_selector(f"{row} .thread-item .thread-title:has-text('Service status')")
        assert orm(lambda: Thread.objects.get(thread_id=first).title) == "Service status"
        assert page.evaluate("document.activeElement.getAttribute('data-thread-id')") == first

        # delete asks first; Cancel keeps it, Delete removes it (the open thread: a new one opens)
        srow = f".thread-row[data-thread-id='{second}']"
        page.click(f"{srow} .thread-delete")
        assert page.inner_text(f"{srow} .confirm-text") == "Delete “second thread” and its messages?"
        screenshot(page, "chat-thread-delete-1280")
        page.click(f"{srow} button:has-text('Cancel')")
        page.wait_for_selector(f"{srow} .thread-item")
        page.click(f"{srow} .thread-delete")
        page.click(f"{srow} .confirm-delete")
        page.wait_for_selector(srow, state="detached")
        assert orm(lambda: sorted(Thread.objects.values_list("thread_id", flat=True))) == [first]
        page.wait_for_function("t => decodeURIComponent(location.hash).indexOf(t) < 0", arg=second)
        page.wait_for_selector(".empty-thread")
        assert page.locator(".thread-item").count() == 1


def test_a_rename_or_a_delete_question_open_in_the_list_stays_when_the_list_is_drawn_again(
        db_url_for_subprocess, tmp_path, browser, page_errors):
    """A run that ends draws the thread list again (here, one another tab starts in the open
    thread): a focus on a row's button stays on that button; the row being renamed keeps its
    form, what was typed and the focus; the row asked about keeps its question; the other rows are
    drawn afresh."""
    from agents.models import Thread

    user()
    with daphne_server(db_url_for_subprocess, tmp_path) as base:
        page = new_page(browser, page_errors)
        sign_in(page, base)
        pick(page, "chat-bot")
        first = answered(page, "first thread")
        open_new_thread(page, first)
        second = answered(page, "second thread")
        page.wait_for_selector(f".thread-item[data-thread-id='{second}']")
        other = new_page(browser, page_errors)  # another tab on the open thread
        other.goto(f"{base}/#/agents/chat-bot/threads/{second}")
        other.wait_for_selector("#conn-status[data-state=connected]")
        wait_answers(other, 1)
        row = f".thread-row[data-thread-id='{first}']"
        fresh = f".thread-row[data-thread-id='{second}']"

        def drawn_again_after(text: str, answers: int) -> None:
            """Marks the rows, sends ``text`` from the other tab, and waits until the list has been
            drawn again (the open thread's row is a new element)."""
            page.eval_on_selector_all(".thread-row", "rs => rs.forEach(r => { r.dataset.seen = '1'; })")
            say(other, text)
            wait_answers(other, answers)
            page.wait_for_selector(f"{fresh}:not([data-seen])", timeout=20_000)

        # a keyboard user on a row's button keeps it: the same button of the same thread, drawn anew
        page.focus(f"{row} .thread-rename")
        drawn_again_after("a first run in the open thread", 2)
        assert page.locator(f"{row}[data-seen]").count() == 0  # a new row
        assert page.evaluate("[document.activeElement.closest('.thread-row')?.dataset.threadId,"
                             " document.activeElement.className]") == [first, "icon-btn small thread-rename"]
        # renaming: the form, the text typed so far and the focus stay
        page.click(f"{row} .thread-rename")
        page.fill(f"{row} .thread-title-input", "Half typed")
        drawn_again_after("a run in the open thread", 3)
        assert page.locator(f"{row}[data-seen] .thread-title-input").count() == 1  # the same element
        assert page.input_value(f"{row} .thread-title-input") == "Half typed"
        assert page.evaluate("document.activeElement.classList.contains('thread-title-input')")
        page.keyboard.type(" and done")
        page.keyboard.press("Enter")
        page.wait_for_selector(f"{row} .thread-item .thread-title:has-text('Half typed and done')")
        assert orm(lambda: Thread.objects.get(thread_id=first).title) == "Half typed and done"
        assert page.evaluate("document.activeElement.getAttribute('data-thread-id')") == first

        # asked about deleting: the question stays, its Cancel focused; Cancel puts the row back
        page.click(f"{row} .thread-delete")
        drawn_again_after("another run in the open thread", 4)
        assert page.inner_text(f"{row}[data-seen] .confirm-text") == "Delete “Half typed and done” and its messages?"
        assert page.evaluate("document.activeElement.textContent") == "Cancel"
        page.keyboard.press("Escape")
        page.wait_for_selector(f"{row} .thread-item .thread-title:has-text('Half typed and done')")
        assert page.evaluate("document.activeElement.getAttribute('data-thread-id')") == first
        assert orm(lambda: Thread.objects.filter(thread_id=first).count()) == 1
        assert page.locator(".thread-row").count() == 2
        # the open thread's row, put back, is marked as the open one again
        page.click(f"{fresh} .thread-delete")
        page.click(f"{fresh} button:has-text('Cancel')")
        assert page.get_attribute(f"{fresh} .thread-item", "aria-current") == "true"
        assert page.evaluate("document.activeElement.classList.contains('current')")


# -- notifications ----------------------------------------------------------------------------------------
def test_the_badge_and_the_panel_agree_records_link_to_their_thread_and_all_are_marked_read(
        db_url_for_subprocess, tmp_path, browser, page_errors):
    from agents.models import Thread
    from inbox.models import NotificationRecord

    user()
    with daphne_server(db_url_for_subprocess, tmp_path) as base:
        page = new_page(browser, page_errors)
        sign_in(page, base)
        pick(page, "chat-bot")
        first = answered(page, "first thread")
        second = open_new_thread(page, first)
        assert page.get_attribute("#notif-toggle", "aria-label") == "Notifications"

        # a test notification from the panel, into the open thread
        page.click("#notif-toggle")
        page.wait_for_selector("#notif-list .empty")
        assert page.inner_text("#notif-pending") == "0 unread"
        assert page.is_disabled("#notif-read-all")
        page.click("#notif-test")
        page.wait_for_selector(".notif")
        record = orm(lambda: NotificationRecord.objects.get())
        assert (record.priority, record.status, record.summary) == ("low", "pending", "A test notification from the chat page")
        assert orm(lambda: Thread.objects.get(pk=record.thread_id).thread_id) == second
        # and one in the first thread, as a webhook would file it
        page.evaluate("""([agent, thread]) => fetch('/chat/api/notifications/test', {method: 'POST',
            headers: {'Content-Type': 'application/json', 'X-CSRFToken': document.cookie.match(/csrftoken=([^;]+)/)[1]},
            body: JSON.stringify({agentId: agent, threadId: thread})})""", ["chat-bot", first])
        page.click("#notif-close")
        page.click("#notif-toggle")  # opening the panel reads the inbox again
        page.wait_for_function("() => document.querySelectorAll('.notif').length === 2")
        # the badge and the panel say the same: 2 unread
        assert page.inner_text("#notif-count") == "2" and page.inner_text("#notif-pending") == "2 unread"
        assert page.get_attribute("#notif-toggle", "aria-label") == "Notifications, 2 unread"
        # each record: its time and a link to its thread
        times = page.eval_on_selector_all(".notif time", "ts => ts.map(t => t.getAttribute('datetime'))")
        assert len(times) == 2 and all(re.match(r"\d{4}-\d\d-\d\dT", t) for t in times)
        assert page.locator(".notif time").first.inner_text() != ""
        links = page.eval_on_selector_all(".notif .notif-thread", "as => as.map(a => a.getAttribute('href'))")
        assert sorted(links) == sorted([f"#/agents/chat-bot/threads/{first}", f"#/agents/chat-bot/threads/{second}"])
        screenshot(page, "chat-notifications-panel-1280")
        assert_accessible(page, "the notifications panel at 1280 px")
        width(page, 360)
        screenshot(page, "chat-notifications-panel-360")
        assert_accessible(page, "the notifications panel at 360 px")
        width(page, 1280)
        # the link opens its thread (and closes the panel)
        page.click(f".notif .notif-thread[href$='{first}']")
        page.wait_for_selector("#notif-panel", state="hidden")
        page.wait_for_function("t => decodeURIComponent(location.hash).endsWith('/threads/' + t)", arg=first)
        page.wait_for_selector("#conn-status[data-state=connected]")
        page.wait_for_selector(".msg-user:has-text('first thread')")
        # mark all read: the badge goes, the panel says 0 unread, the records stay (seen)
        page.click("#notif-toggle")
        page.click("#notif-read-all")
        page.wait_for_selector("#notif-count", state="hidden")
        assert page.inner_text("#notif-pending") == "0 unread"
        page.wait_for_function("() => [...document.querySelectorAll('.notif .notif-status')].every(s => s.textContent === 'seen')")
        assert orm(lambda: sorted(NotificationRecord.objects.values_list("status", flat=True))) == ["seen", "seen"]
        screenshot(page, "chat-notifications-read-1280")


def test_the_notifications_panel_keeps_the_focus_where_it_was_when_its_list_is_drawn_again(
        db_url_for_subprocess, tmp_path, browser, page_errors):
    """The panel's list is drawn again every 15 s and after each action; a keyboard user keeps their
    place: the same control of the same record; its Dismiss once Mark read is gone; the record now
    in the place of one dismissed (the last, when it was the last); Close once none is left."""
    user()
    with daphne_server(db_url_for_subprocess, tmp_path) as base:
        page = new_page(browser, page_errors)
        page.clock.install()  # time goes on as usual; run_for() skips ahead
        sign_in(page, base)
        pick(page, "chat-bot")
        answered(page, "first thread")
        page.click("#notif-toggle")
        page.wait_for_selector("#notif-list .empty")
        for count in (1, 2, 3):
            page.click("#notif-test")
            page.wait_for_function("n => document.querySelectorAll('.notif').length === n", arg=count)
        ids = page.eval_on_selector_all(".notif", "rs => rs.map(r => r.dataset.recordId)")
        focused = """() => { const a = document.activeElement, r = a.closest('.notif');
                             return [r ? r.dataset.recordId : a.id, a.className]; }"""

        def record(n: int) -> str:
            return f".notif[data-record-id='{ids[n]}']"

        # the 15 s redraw
        page.focus(f"{record(1)} .notif-thread")
        page.eval_on_selector_all(".notif", "rs => rs.forEach(r => { r.dataset.seen = '1'; })")
        page.clock.run_for(15_000)
        page.wait_for_function("() => document.querySelectorAll('.notif').length === 3"
                               " && !document.querySelector('.notif[data-seen]')")
        assert page.evaluate(focused) == [ids[1], "notif-thread"]
        # Mark read from the keyboard: the button goes, the focus moves to the record's Dismiss
        page.focus(f"{record(1)} .notif-read")
        page.keyboard.press("Enter")
        page.wait_for_selector(f"{record(1)}.status-seen")
        assert page.evaluate(focused) == [ids[1], "link-btn notif-dismiss"]
        # Dismiss: the record goes, the focus moves to the one now in its place, then to the last
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.querySelectorAll('.notif').length === 2")
        assert page.evaluate(focused) == [ids[2], "link-btn notif-dismiss"]
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.querySelectorAll('.notif').length === 1")
        assert page.evaluate(focused) == [ids[0], "link-btn notif-dismiss"]
        # none left: Close
        page.keyboard.press("Enter")
        page.wait_for_selector("#notif-list .empty")
        assert page.evaluate(focused) == ["notif-close", "link-btn"]


# -- accessibility ----------------------------------------------------------------------------------------
def test_streaming_is_busy_a_finished_answer_is_announced_the_closed_drawer_is_inert_and_axe_passes(
        db_url_for_subprocess, tmp_path, browser, page_errors):
    user()
    with daphne_server(db_url_for_subprocess, tmp_path, **SLOW) as base:
        page = new_page(browser, page_errors)
        # the login page
        page.goto(base + "/login/")
        screenshot(page, "login-1280")
        assert_accessible(page, "the login page at 1280 px")
        width(page, 360)
        page.emulate_media(color_scheme="dark")
        screenshot(page, "login-dark-360")
        assert_accessible(page, "the login page at 360 px, dark")
        page.emulate_media(color_scheme="light")
        width(page, 1280)
        sign_in(page, base)
        pick(page, "chat-bot")
        # the transcript is not a live region (each streamed piece would be read); a status region
        # reads the finished answer once
        assert page.get_attribute("#transcript", "aria-live") is None
        assert page.get_attribute("#announcer", "aria-live") == "polite"
        assert page.get_attribute("#transcript", "aria-busy") == "false"
        say(page, "line one\nline two\nline three")
        page.wait_for_selector("#transcript[aria-busy=true]")
        assert page.text_content("#announcer") == ""
        page.wait_for_selector("#transcript[aria-busy=false]", timeout=20_000)
        page.wait_for_function("() => document.querySelector('#announcer').textContent !== ''")
        assert page.text_content("#announcer") == "Chat Bot answered: echo: line one\necho: line two\necho: line three"
        wait_idle(page)
        # waiting for an approval is not busy: the card is there to be read
        say(page, '/tool delete-file {"path": "/tmp/a11y"}')
        page.wait_for_selector(".approval")
        page.wait_for_selector("#running-label:has-text('Waiting for approval')")
        assert page.get_attribute("#transcript", "aria-busy") == "false"
        assert_accessible(page, "an approval card at 1280 px")
        page.click(".approval button.decline")
        wait_idle(page)

        # the focus is visible: Tab to the composer's buttons
        page.focus("#composer")
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "send"
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle + ' ' + "
                                "getComputedStyle(document.activeElement).outlineWidth")
        assert outline == "solid 2px"
        screenshot(page, "chat-focus-1280")
        assert_accessible(page, "a conversation at 1280 px")
        page.emulate_media(color_scheme="dark")
        assert_accessible(page, "a conversation at 1280 px, dark")
        page.emulate_media(color_scheme="light")

        # 360 px: the thread list is a drawer, out of the tab order while closed
        width(page, 360)
        assert page.evaluate("document.getElementById('sidebar').inert") is True
        # nothing of the closed drawer takes the focus: not by Tab, not from a script
        page.focus("#menu-toggle")
        inside = []
        for _ in range(12):
            page.keyboard.press("Tab")
            inside.append(page.evaluate("document.getElementById('sidebar').contains(document.activeElement)"))
        assert inside == [False] * 12
        assert page.evaluate("document.getElementById('thread-search').focus(), document.activeElement.id") != "thread-search"
        screenshot(page, "chat-a11y-360")
        assert_accessible(page, "a conversation at 360 px")
        page.click("#menu-toggle")
        assert page.evaluate("document.getElementById('sidebar').inert") is False
        assert page.get_attribute("#menu-toggle", "aria-expanded") == "true"
        assert page.evaluate("document.activeElement.id") == "new-thread"
        page.wait_for_function("() => document.getAnimations().filter(a => a.playState === 'running').length === 0")
        screenshot(page, "chat-drawer-open-360")
        assert_accessible(page, "the open drawer at 360 px")
        page.keyboard.press("Escape")
        assert page.evaluate("document.getElementById('sidebar').inert") is True
        assert page.evaluate("document.activeElement.id") == "menu-toggle"
        page.emulate_media(color_scheme="dark")
        width(page, 360)
        screenshot(page, "chat-a11y-dark-360")
        assert_accessible(page, "a conversation at 360 px, dark")
        # every control has an accessible name at this width too (axe's button-name, label, select-name
        # rules above; and the reminders toggle whose visible word is hidden here)
        assert page.evaluate("document.getElementById('show-reminders').labels[0].textContent.trim()") == "Reminders"
        assert page.get_attribute("#show-reminders", "aria-label") == "Show system reminders"
        # wide again: the list is no drawer, and it is in the tab order
        width(page, 1280)
        # the page follows the width through a media query's change event, dispatched after the resize
        page.wait_for_function("() => document.getElementById('sidebar').inert === false")


# -- tool cards of runs that reuse tool-call ids ---------------------------------------------------------
def test_a_provider_that_reuses_tool_call_ids_across_runs_gets_one_card_per_run(
        db_url_for_subprocess, tmp_path, browser, page_errors):
    user()
    with daphne_server(db_url_for_subprocess, tmp_path) as base:
        page = new_page(browser, page_errors)
        sign_in(page, base)
        pick(page, "forgetful")  # no history: the echo model names its call alike in every run
        cards = ".tool"
        for n in (1, 2):
            say(page, '/tool ping {"n": %d}' % n)
            page.wait_for_function("n => document.querySelectorAll('.tool .tool-status').length === n && "
                                   "[...document.querySelectorAll('.tool .tool-status')].every(s => s.textContent === 'done')",
                                   arg=n, timeout=20_000)
            wait_idle(page)
        ids = page.eval_on_selector_all(cards, "cs => cs.map(c => [c.dataset.toolCallId, c.dataset.toolRunId])")
        assert len(ids) == 2 and ids[0][0] == ids[1][0]  # the same tool-call id...
        assert ids[0][1] != ids[1][1]  # ...in two runs: two cards
        results = []
        for i in range(2):
            page.locator(".tool summary").nth(i).click()
            results.append(page.locator(".tool .tool-result").nth(i).inner_text())
        assert results == ['{\n  "pong": 1\n}', '{\n  "pong": 2\n}']
        screenshot(page, "chat-reused-tool-call-ids-1280")
        # after a reload: the stored cards, one per message, each with its result
        page.reload()
        page.wait_for_selector("#conn-status[data-state=connected]")
        page.wait_for_function("() => document.querySelectorAll('.tool').length === 2")
        assert page.locator(".tool .tool-status").all_inner_texts() == ["done", "done"]
        assert page.locator(".msg-assistant .md").all_inner_texts() == [
            'echo: tool ping returned {"pong": 1}', 'echo: tool ping returned {"pong": 2}']


# -- the page side of four fixes ---------------------------------------------------------------------------
def test_slash_thread_ids_failed_runs_refused_sends_and_per_agent_labels(db_url_for_subprocess, tmp_path, browser,
                                                                        page_errors):
    from tests.chat.test_e2e import KEEP_SOCKETS, store_signals

    user()
    orm(lambda: store_signals("ann", "github:acme/app", [
        {"type": "user", "contents": "issue opened on acme/app", "attributes": {"sender": "octocat", "platform": "github"}}]))
    # four sends go through, the fifth is refused (the send rate, shared with the HTTP API)
    with daphne_server(db_url_for_subprocess, tmp_path, MASTRA_API_SEND_RATE="4/min") as base:
        page = new_page(browser, page_errors)
        page.add_init_script(KEEP_SOCKETS)
        sign_in(page, base)

        # 1. a thread id with "/" opens from its deep link, percent-encoded or pasted as it is
        for link in ("#/agents/chat-bot/threads/github%3Aacme%2Fapp", "#/agents/chat-bot/threads/github:acme/app"):
            page.goto(base + "/" + link)
            page.wait_for_selector("#conn-status[data-state=connected]")
            page.wait_for_selector(".msg-user:has-text('issue opened on acme/app')")
            assert page.inner_text(".msg-user .msg-label") == "octocat · github"
            assert page.evaluate("window.testSockets[window.testSockets.length - 1].url") == (
                base.replace("http", "ws") + "/ws/agents/chat-bot/threads/github%3Aacme%2Fapp/")
        screenshot(page, "fix-slash-thread-id-1280")
        # a thread the socket refuses for good: no retry, and the page says why
        page.goto("about:blank")  # the next one is a fresh document
        page.goto(base + "/#/agents/chat-bot/threads/" + "x" * 300)
        page.wait_for_selector("#conn-status:has-text('Not found')")
        page.wait_for_selector(".notice-line:has-text('This thread does not exist for you')")
        # a socket dropped before its answer (a loaded machine) is retried as designed; the one
        # refused is the last: nothing is opened after it
        refused = page.evaluate("window.testSockets.length")
        page.wait_for_timeout(1500)  # longer than the first retry's delay (0.5 s): none comes
        assert page.evaluate("window.testSockets.length") == refused
        assert page.evaluate("window.testSockets[window.testSockets.length - 1].readyState") == 3  # CLOSED
        screenshot(page, "fix-refused-socket-1280")

        # 4. each answer keeps the agent that wrote it, after switching agent and after a reload
        page.goto(base + "/")
        page.wait_for_selector("#conn-status[data-state=connected]")
        pick(page, "chat-bot")
        say(page, "from chat bot")
        wait_answers(page, 1)
        wait_idle(page)
        pick(page, "helper")
        say(page, "from helper")
        wait_answers(page, 2)
        wait_idle(page)
        labels = page.locator(".msg-assistant .msg-label").all_inner_texts()
        assert labels == ["Chat Bot", "Another Helper"]
        page.reload()
        page.wait_for_selector("#conn-status[data-state=connected]")
        wait_answers(page, 2)
        assert page.locator(".msg-assistant .msg-label").all_inner_texts() == labels
        screenshot(page, "fix-per-agent-labels-1280")

        # 2. a failed run leaves its reason and a Retry in the thread, after a reload too
        page.click("#new-thread")
        page.wait_for_selector(".empty-thread")
        pick(page, "broken")
        say(page, "please answer")
        page.wait_for_selector(".run-note.error-note button.retry")
        wait_idle(page)
        page.reload()
        page.wait_for_selector("#conn-status[data-state=connected]")
        note = page.wait_for_selector(".msg-assistant .run-note.error-note")
        assert "the provider answered 503: overloaded" in note.inner_text()
        assert page.get_attribute(".run-note.error-note button.retry", "aria-label") == "Retry: send the message again"
        screenshot(page, "fix-failed-run-after-reload-1280")
        page.click(".run-note.error-note button.retry")
        page.wait_for_function("() => document.querySelectorAll('.msg-user').length === 2")
        assert page.locator(".msg-user .plain").all_inner_texts() == ["please answer", "please answer"]
        wait_idle(page)

        # 3. a refused send keeps its text in the composer (here: the fifth send, over the rate)
        say(page, "this one is refused")
        page.wait_for_selector(".notice-line:has-text('throttled')")
        assert page.input_value("#composer") == "this one is refused"
        screenshot(page, "fix-refused-send-keeps-text-1280")


# -- before the page's script runs ------------------------------------------------------------------------
def test_text_typed_before_the_page_script_runs_stays_and_is_sent_once_it_has_run(db_url_for_subprocess, tmp_path,
                                                                                   browser, page_errors):
    user()
    with daphne_server(db_url_for_subprocess, tmp_path) as base:
        page = new_page(browser, page_errors)
        sign_in(page, base)
        # the entry module is held back, as on a slow network: the form is there, its script is not
        held = []
        page.route(re.compile(r".*/chat/chat(\.[0-9a-f]+)?\.js$"), lambda route: held.append(route))
        page.goto(base + "/", wait_until="commit")
        page.wait_for_selector("#composer")
        assert page.is_disabled("#send") and page.is_disabled("#queue-send")
        page.fill("#composer", "typed early")
        page.press("#composer", "Enter")  # a textarea takes a new line: there is no implicit submit
        page.click("#send", force=True)  # a disabled submit button submits nothing: no reload
        page.click("#queue-send", force=True)
        assert held, "the page asked for its entry module"
        assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
        assert page.url == base + "/"
        assert page.input_value("#composer") == "typed early\n"
        screenshot(page, "composer-before-script-1280")
        # the script arrives: the buttons work and the text typed meanwhile is what is sent
        held[0].continue_()
        page.wait_for_selector("#conn-status[data-state=connected]")
        assert not page.is_disabled("#send") and not page.is_disabled("#queue-send")
        assert page.input_value("#composer") == "typed early\n"
        page.click("#send")
        page.wait_for_selector(".msg-assistant:has-text('echo: typed early')", timeout=20_000)
        wait_idle(page)
        assert page.locator(".msg-user .plain").all_inner_texts() == ["typed early\n"]  # as typed
        assert page.input_value("#composer") == ""


# -- a long thread -----------------------------------------------------------------------------------------
def test_a_long_thread_opens_with_its_newest_messages_and_shows_earlier_ones_in_place(
        db_url_for_subprocess, tmp_path, browser, page_errors):
    from agents.store import messages_save

    user()
    texts = [f"line {i} of a long chat" for i in range(1, 231)]
    orm(lambda: messages_save(resource_id="ann", thread_id="long", messages=[
        {"id": f"m{i:04d}", "role": "user" if i % 2 else "assistant", "content": text}
        for i, text in enumerate(texts, start=1)]))
    shown = "() => [...document.querySelectorAll('.msg .msg-body')].map(m => m.innerText.trim())"
    with daphne_server(db_url_for_subprocess, tmp_path) as base:
        page = new_page(browser, page_errors)
        sign_in(page, base)
        page.goto(base + "/#/agents/chat-bot/threads/long")
        page.wait_for_function("() => document.querySelectorAll('.msg').length === 100")
        assert page.evaluate(shown) == texts[-100:]
        # the reader scrolls up to the line and asks for more: what they read stays where it was
        page.evaluate("document.getElementById('transcript').scrollTop = 0")
        reading = page.query_selector(".msg")  # this element, wherever it goes
        top = reading.bounding_box()["y"]
        page.focus("button.earlier")
        page.keyboard.press("Enter")
        page.wait_for_function("() => document.querySelectorAll('.msg').length === 200")
        assert abs(reading.bounding_box()["y"] - top) <= 2
        # the same button, still focused, for the next batch
        assert page.evaluate("document.activeElement.className") == "earlier"
        assert reading.inner_text().endswith(texts[-100])
        screenshot(page, "chat-earlier-messages-1280")
        page.evaluate("document.getElementById('transcript').scrollTop = 0")
        page.click("button.earlier")
        page.wait_for_function("() => document.querySelectorAll('.msg').length === 230")
        assert page.locator("button.earlier").count() == 0
        assert page.evaluate(shown) == texts
        # the thread goes on below what was read
        say(page, "one more")
        wait_idle(page)
        page.wait_for_function("() => document.querySelectorAll('.msg').length === 232")
        assert page.evaluate(shown)[:230] == texts
