"""A fake Slack Web API and a fake GitHub REST API, as HTTP servers on loopback, for the tests,
``bench/channel_replies.py`` and trying an agent's channels locally (docs/channels.md): point an adapter's
``api_url`` at one and the real SDKs (``slack_sdk``, ``githubkit``) talk to it.

Each records every call (``calls``: ``(name, fields)`` in order) and keeps the messages or
comments posted, so a test asserts exactly what the platform received. ``script(name, *actions)``
queues what the next calls of an endpoint do instead of answering normally:

- ``("rate_limit", seconds)``: HTTP 429 with ``Retry-After`` (nothing stored);
- ``("error", status, message)``: that HTTP status (Slack: ``{"ok": false, "error": message}``);
- ``("hang", seconds)``: the call is carried out (stored) and then answered only after
  ``seconds``: a client with a shorter timeout sees a timeout after the platform accepted.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections import defaultdict
from urllib.parse import parse_qsl

from aiohttp import web


class FakeServer:
    """The common part: the aiohttp server, the call log and the scripted actions."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []
        self.scripts: dict[str, list[tuple]] = defaultdict(list)
        self.runner: web.AppRunner | None = None
        self.url = ""

    def routes(self, app: web.Application) -> None:
        raise NotImplementedError

    async def start(self) -> str:
        app = web.Application()
        self.routes(app)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        await web.SockSite(self.runner, sock).start()
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()
            self.runner = None

    def script(self, name: str, *actions: tuple) -> None:
        self.scripts[name].extend(actions)

    def count(self, name: str) -> int:
        return sum(1 for call, _ in self.calls if call == name)

    def next_action(self, name: str) -> tuple | None:
        queue = self.scripts.get(name)
        return queue.pop(0) if queue else None


class FakeSlack(FakeServer):
    """Slack's Web API at ``<url>/api/<method>``: ``auth.test``, ``users.info``,
    ``chat.postMessage``, ``chat.update``, ``chat.postEphemeral``, ``conversations.replies``.
    ``users`` maps user ids to display names; ``seed()`` puts messages in a channel beforehand."""

    def __init__(self, *, bot_user: str = "UBOT", bot_id: str = "BBOT", users: dict | None = None):
        super().__init__()
        self.bot_user, self.bot_id = bot_user, bot_id
        self.users = dict(users or {})
        self.messages: dict[str, list[dict]] = defaultdict(list)
        self.ephemerals: list[dict] = []
        self._ts = itertools.count(1)

    @property
    def api_url(self) -> str:
        return f"{self.url}/api/"

    def routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/api/{method}", self.handle)

    def seed(self, channel: str, *messages: dict) -> None:
        self.messages[channel].extend(messages)

    def posted(self, channel: str | None = None) -> list[dict]:
        """The messages the app posted (in a channel, or everywhere), in order."""
        channels = [channel] if channel else list(self.messages)
        return [m for c in channels for m in self.messages[c] if m.get("bot_id") == self.bot_id]

    async def handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        fields = dict(request.query)
        body = await request.read()
        if body:
            kind = request.content_type
            if kind == "application/json":
                fields.update(json.loads(body))
            else:
                fields.update(dict(parse_qsl(body.decode())))
        self.calls.append((method, fields))
        action = self.next_action(method)
        if action and action[0] == "rate_limit":
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": str(action[1])})
        if action and action[0] == "error":
            return web.json_response({"ok": False, "error": action[2]}, status=action[1])
        answer = self.answer(method, fields)
        if action and action[0] == "hang":
            await asyncio.sleep(action[1])
        return web.json_response(answer)

    def answer(self, method: str, fields: dict) -> dict:
        if method == "auth.test":
            return {"ok": True, "user_id": self.bot_user, "bot_id": self.bot_id, "team_id": "T1"}
        if method == "users.info":
            user = fields.get("user", "")
            name = self.users.get(user, user)
            return {"ok": True, "user": {"id": user, "name": name.lower(), "profile": {"display_name": name}}}
        if method == "chat.postMessage":
            ts = f"{1700000000 + next(self._ts)}.000100"
            metadata = fields.get("metadata")
            if isinstance(metadata, str):
                metadata = json.loads(metadata)
            message = {"ts": ts, "text": fields.get("text", ""), "user": self.bot_user, "bot_id": self.bot_id,
                       "thread_ts": fields.get("thread_ts"), "blocks": fields.get("blocks"), "metadata": metadata}
            self.messages[fields["channel"]].append(message)
            return {"ok": True, "channel": fields["channel"], "ts": ts, "message": message}
        if method == "chat.update":
            for message in self.messages[fields["channel"]]:
                if message["ts"] == fields["ts"]:
                    message["text"] = fields.get("text", "")
                    blocks = fields.get("blocks")
                    message["blocks"] = json.loads(blocks) if isinstance(blocks, str) else blocks
                    return {"ok": True, "channel": fields["channel"], "ts": fields["ts"]}
            return {"ok": False, "error": "message_not_found"}
        if method == "chat.postEphemeral":
            self.ephemerals.append({"channel": fields.get("channel"), "user": fields.get("user"),
                                    "text": fields.get("text")})
            return {"ok": True, "message_ts": f"{1700000000 + next(self._ts)}.000200"}
        if method == "conversations.replies":
            root = fields.get("ts")
            found = [dict(m) for m in self.messages[fields.get("channel", "")]
                     if m["ts"] == root or m.get("thread_ts") == root]
            if fields.get("include_all_metadata") not in ("1", "true", True, 1):
                for m in found:
                    m.pop("metadata", None)
            return {"ok": True, "messages": found, "has_more": False}
        return {"ok": False, "error": "unknown_method"}


class FakeGitHub(FakeServer):
    """GitHub's REST API: issue comments (create, edit, list), reactions, a collaborator's
    permission and a GitHub App installation's token. ``permissions`` maps logins to
    ``admin`` / ``write`` / ``read``."""

    def __init__(self, *, bot_login: str = "ops-bot", permissions: dict | None = None):
        super().__init__()
        self.bot_login = bot_login
        self.permissions = dict(permissions or {})
        self.comments: dict[tuple[str, int], list[dict]] = defaultdict(list)
        self.reactions: list[dict] = []
        self.hang = 0.0
        self._ids = itertools.count(9001)

    def routes(self, app: web.Application) -> None:
        r = app.router
        r.add_post("/repos/{owner}/{repo}/issues/{number}/comments", self.create_comment)
        r.add_get("/repos/{owner}/{repo}/issues/{number}/comments", self.list_comments)
        r.add_patch("/repos/{owner}/{repo}/issues/comments/{id}", self.update_comment)
        r.add_post("/repos/{owner}/{repo}/issues/comments/{id}/reactions", self.reaction)
        r.add_post("/repos/{owner}/{repo}/pulls/comments/{id}/reactions", self.reaction)
        r.add_post("/repos/{owner}/{repo}/issues/{number}/reactions", self.reaction)
        r.add_get("/repos/{owner}/{repo}/collaborators/{login}/permission", self.permission)
        r.add_post("/app/installations/{id}/access_tokens", self.token)

    def comments_on(self, repository: str, number: int) -> list[dict]:
        return self.comments[(repository, int(number))]

    async def scripted(self, name: str, fields: dict) -> web.Response | None:
        self.calls.append((name, fields))
        action = self.next_action(name)
        if action and action[0] == "rate_limit":
            return web.json_response({"message": "You have exceeded a secondary rate limit."}, status=403,
                                     headers={"Retry-After": str(action[1])})
        if action and action[0] == "error":
            return web.json_response({"message": action[2]}, status=action[1])
        if action and action[0] == "hang":
            self.hang = action[1]
        return None

    async def later(self) -> None:
        wait, self.hang = self.hang, 0.0
        if wait:
            await asyncio.sleep(wait)

    def comment_json(self, comment: dict) -> dict:
        return {**comment, "node_id": f"IC_{comment['id']}", "url": "", "issue_url": "", "author_association": "NONE",
                "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z"}

    async def create_comment(self, request: web.Request) -> web.Response:
        info = request.match_info
        body = (await request.json()).get("body", "")
        refused = await self.scripted("create_comment", {**info, "body": body})
        if refused is not None:
            return refused
        comment = {"id": next(self._ids), "body": body, "user": {"login": f"{self.bot_login}[bot]", "type": "Bot"},
                   "html_url": f"https://github.test/{info['owner']}/{info['repo']}/issues/{info['number']}"}
        self.comments_on(f"{info['owner']}/{info['repo']}", int(info["number"])).append(comment)
        await self.later()
        return web.json_response(self.comment_json(comment), status=201)

    async def list_comments(self, request: web.Request) -> web.Response:
        info = request.match_info
        refused = await self.scripted("list_comments", dict(info))
        if refused is not None:
            return refused
        page, per_page = int(request.query.get("page", 1)), int(request.query.get("per_page", 30))
        found = self.comments_on(f"{info['owner']}/{info['repo']}", int(info["number"]))
        return web.json_response([self.comment_json(c) for c in found[(page - 1) * per_page:page * per_page]])

    async def update_comment(self, request: web.Request) -> web.Response:
        info = request.match_info
        body = (await request.json()).get("body", "")
        refused = await self.scripted("update_comment", {**info, "body": body})
        if refused is not None:
            return refused
        for comments in self.comments.values():
            for comment in comments:
                if comment["id"] == int(info["id"]):
                    comment["body"] = body
                    await self.later()
                    return web.json_response(self.comment_json(comment))
        return web.json_response({"message": "Not Found"}, status=404)

    async def reaction(self, request: web.Request) -> web.Response:
        info = dict(request.match_info)
        content = (await request.json()).get("content")
        refused = await self.scripted("reaction", {**info, "path": request.path, "content": content})
        if refused is not None:
            return refused
        self.reactions.append({"path": request.path, "content": content})
        return web.json_response({"id": next(self._ids), "content": content, "node_id": "R",
                                  "created_at": "2026-01-01T00:00:00Z"}, status=201)

    async def permission(self, request: web.Request) -> web.Response:
        login = request.match_info["login"]
        refused = await self.scripted("permission", {"login": login})
        if refused is not None:
            return refused
        return web.json_response({"permission": self.permissions.get(login, "read"), "role_name": "",
                                  "user": {"login": login}})

    async def token(self, request: web.Request) -> web.Response:
        await self.scripted("installation_token", dict(request.match_info))
        return web.json_response({"token": "ghs_fake", "expires_at": "2099-01-01T00:00:00Z"}, status=201)


__all__ = ["FakeGitHub", "FakeSlack"]
