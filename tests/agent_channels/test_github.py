"""GitHub at the wire: deliveries signed with X-Hub-Signature-256, answered through the real
``githubkit`` against the fake REST API: one comment per run edited in place, 👀 on the trigger,
trusted authors only, redeliveries once, approvals by /approve and /deny."""

import asyncio

import pytest

from agent_channels.models import ChannelApproval, ChannelEvent, ChannelThread, OutboxMessage
from agents.models import ToolApproval
from tests.agent_channels import site
from tests.agent_channels.conftest import github_post, issue_comment

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_ping_answers_200(channel_site):
    status, body = await github_post({"zen": "Keep it simple.", "hook_id": 1}, event="ping", delivery="d-ping")
    assert (status, body) == (200, {"ok": True, "zen": "Keep it simple."})


async def test_a_mention_gets_eyes_and_one_comment(channel_site, github_fake, drive):
    status, body = await github_post(issue_comment("@ops-bot why is the deploy stuck?", comment_id=101),
                                     event="issue_comment", delivery="d-1")
    assert (status, body) == (200, {"ok": True, "status": "accepted"})
    await drive()
    [comment] = github_fake.comments_on("octo/repo", 7)
    run_key = (await OutboxMessage.objects.aget(key__startswith="answer:")).key
    assert comment["body"] == (f"echo: [octocat (@octocat)]: @ops-bot why is the deploy stuck?\n\n"
                               f"<!-- mastra:{run_key} -->")
    assert github_fake.reactions == [{"path": "/repos/octo/repo/issues/comments/101/reactions", "content": "eyes"}]
    thread = await ChannelThread.objects.aget()
    assert (thread.key, thread.resource_id, thread.thread_id) == ("octo/repo#7", "github:octo", "octo/repo#7")


async def log_grown(*, since: int, timeout: float = 10.0) -> int:
    """The number of chunks in the event log, once it holds more than ``since`` or its run ended."""
    from agents.models import ThreadEvent

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        chunks = [e.chunk["type"] async for e in ThreadEvent.objects.all()]
        if len(chunks) > since or "finish" in chunks or asyncio.get_running_loop().time() > deadline:
            return len(chunks)
        await asyncio.sleep(0.01)


async def test_an_answer_is_one_comment_edited_in_place(make_site, transactional_db, github_fake, drive):
    make_site(models={"slow": {"id": "local/echo", "delay_ms": 30, "chunk_size": 4}})
    await github_post(issue_comment("@ops-bot summarise the incident please", comment_id=102), event="issue_comment",
                      delivery="d-2", agent="slow")
    from agent_channels.handoff import handoffs_wait
    from agent_channels.work import channels_work
    from tests.agent_channels.conftest import Clock

    await handoffs_wait()
    clock = Clock(step=1.0)
    logged = 0
    for _ in range(6):  # passes while the answer streams, one a (test) second
        # each pass after the event log grew (its writes are batched in time): the relay sees the text
        # grow whatever the machine's speed, and a pass after the run's end sees the whole text
        logged = await log_grown(since=logged)
        await channels_work(now=clock.tick())
    await drive()
    [comment] = github_fake.comments_on("octo/repo", 7)
    assert comment["body"].startswith("echo: [octocat (@octocat)]: @ops-bot summarise the incident please\n\n<!--")
    creates, edits = github_fake.count("create_comment"), github_fake.count("update_comment")
    assert creates == 1
    # edits at most every 2 s of the test's clock while the text grew, the final body once at the end
    assert 1 <= edits <= 4


async def test_an_untrusted_author_is_ignored(channel_site, github_fake, drive):
    status, body = await github_post(issue_comment("@ops-bot delete everything", comment_id=103, login="stranger",
                                                   association="NONE"), event="issue_comment", delivery="d-3")
    assert (status, body["status"]) == (200, "ignored")
    assert body["reason"] == "stranger (NONE) is not trusted to start a run"
    await drive()
    assert await ChannelEvent.objects.acount() == 0 and github_fake.calls == []


async def test_bots_are_not_answered(channel_site, github_fake, drive):
    own = await github_post(issue_comment("@ops-bot echo", comment_id=104, login="ops-bot[bot]", user_type="Bot"),
                            event="issue_comment", delivery="d-4")
    other = await github_post(issue_comment("@ops-bot hi", comment_id=105, login="dependabot[bot]",
                                            user_type="Bot"), event="issue_comment", delivery="d-5")
    assert [b["status"] for _, b in (own, other)] == ["ignored", "ignored"]
    await drive()
    assert github_fake.calls == []


async def test_a_redelivery_is_answered_once(channel_site, github_fake, drive):
    payload = issue_comment("@ops-bot status?", comment_id=106)
    first = await github_post(payload, event="issue_comment", delivery="d-6")
    again = await github_post(payload, event="issue_comment", delivery="d-6")
    other_id = await github_post(payload, event="issue_comment", delivery="d-6-replayed")
    assert [b["status"] for _, b in (first, again, other_id)] == ["accepted", "duplicate", "duplicate"]
    await drive()
    assert len(github_fake.comments_on("octo/repo", 7)) == 1


async def test_a_conversation_without_a_mention_is_answered_only_once_the_agent_takes_part(
        channel_site, github_fake, drive):
    _, before = await github_post(issue_comment("unrelated", comment_id=107), event="issue_comment", delivery="d-7")
    assert before["status"] == "ignored"
    await github_post(issue_comment("@ops-bot hello", comment_id=108), event="issue_comment", delivery="d-8")
    await drive()
    _, after = await github_post(issue_comment("and the logs?", comment_id=109, login="hubot",
                                               association="MEMBER"), event="issue_comment", delivery="d-9")
    assert after["status"] == "accepted"
    await drive()
    bodies = [c["body"].split("\n\n<!--")[0] for c in github_fake.comments_on("octo/repo", 7)]
    assert bodies == ["echo: [octocat (@octocat)]: @ops-bot hello", "echo: [hubot (@hubot)]: and the logs?"]


async def test_a_forged_delivery_is_refused(channel_site, github_fake):
    status, body = await github_post(issue_comment("@ops-bot hi", comment_id=110), event="issue_comment",
                                     delivery="d-10", secret="forged")
    assert (status, body["code"]) == (401, "invalid_signature")
    assert await ChannelEvent.objects.acount() == 0


ASK = '@ops-bot clean up\n/tool delete {"path": "b.txt"}'


async def test_approve_by_a_writer_runs_the_tool(channel_site, github_fake, drive):
    await github_post(issue_comment(ASK, comment_id=120), event="issue_comment", delivery="d-20")
    await drive()
    [card] = github_fake.comments_on("octo/repo", 7)
    assert card["body"].startswith("**Approval needed**: the agent wants to run `delete` with")
    _, refused = await github_post(issue_comment("/approve", comment_id=121, login="visitor", association="NONE"),
                                   event="issue_comment", delivery="d-21")
    assert refused["status"] == "accepted"
    await drive()
    assert site.deleted == [] and (await ToolApproval.objects.aget()).status == "pending"
    assert github_fake.comments_on("octo/repo", 7)[1]["body"].startswith(
        "@visitor You are not allowed to decide this approval.")
    await github_post(issue_comment("/approve", comment_id=122, login="hubot", association="MEMBER"),
                      event="issue_comment", delivery="d-22")
    await drive()
    assert site.deleted == ["b.txt"]
    approval = await ChannelApproval.objects.aget()
    assert (approval.status, approval.decided_by) == ("approved", "hubot")
    card_now = github_fake.comments_on("octo/repo", 7)[0]["body"]
    assert card_now.startswith("Approved by @hubot: `delete` runs.")
    assert 'tool delete returned {"deleted": "b.txt"}' in github_fake.comments_on("octo/repo", 7)[-1]["body"]


async def test_deny_never_runs_the_tool(channel_site, github_fake, drive):
    await github_post(issue_comment(ASK, comment_id=130), event="issue_comment", delivery="d-30")
    await drive()
    await github_post(issue_comment("/deny", comment_id=131), event="issue_comment", delivery="d-31")
    await drive()
    assert site.deleted == [] and (await ToolApproval.objects.aget()).status == "declined"


async def test_a_review_comment_belongs_to_its_pull_requests_thread(channel_site, github_fake, drive):
    payload = {"action": "created", "installation": {"id": 42}, "repository": {"full_name": "octo/repo"},
               "pull_request": {"number": 7}, "sender": {"login": "octocat"},
               "comment": {"id": 140, "body": "@ops-bot is this line right?", "author_association": "COLLABORATOR",
                           "user": {"login": "octocat", "type": "User"}, "html_url": ""}}
    status, body = await github_post(payload, event="pull_request_review_comment", delivery="d-40")
    assert body["status"] == "accepted"
    await drive()
    assert github_fake.reactions == [{"path": "/repos/octo/repo/pulls/comments/140/reactions", "content": "eyes"}]
    assert len(github_fake.comments_on("octo/repo", 7)) == 1
    assert (await ChannelThread.objects.aget()).key == "octo/repo#7"


async def test_a_github_app_writes_with_its_installation_token(github_fake):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    from agent_channels.github import comment_create
    from agents.runtime import create_github_adapter

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    adapter = create_github_adapter(webhook_secret="w", app_id=1234, private_key=key, bot_login="ops-bot",
                                    api_url=github_fake.url)
    comment_id = await comment_create(adapter.client(42), target={"repository": "octo/repo", "number": 3},
                                      key="answer:r:0", body="hello")
    assert [name for name, _ in github_fake.calls] == ["installation_token", "create_comment"]
    assert github_fake.calls[0][1] == {"id": "42"}
    assert github_fake.comments_on("octo/repo", 3)[0]["id"] == int(comment_id)
