"""Static files in production: ``manage.py collectstatic`` into ``STATIC_ROOT``, then
``daphne mastra_site.asgi:application`` alone with ``DEBUG=false`` serves them (WhiteNoise): hashed
names in the pages, a year's ``Cache-Control`` on them, the chat page's ES modules naming each
other by their hashed names (never a plain name fetched), the page styled and answering in headless
Chromium, and Swagger UI's files for ``/api/docs/`` from the site itself."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request

import pytest
from django.contrib.auth import get_user_model

from tests.chat.browser import ROOT, chromium, daphne_server, orm
from tests.chat.test_e2e import PASSWORD, pick_bot, say, sign_in, wait_text

pytestmark = pytest.mark.django_db(transaction=True)

YEAR = "max-age=315360000, public, immutable"


def production_env(static_root) -> dict[str, str]:
    return {"DEBUG": "false", "ALLOWED_HOSTS": "127.0.0.1,localhost", "STATIC_ROOT": str(static_root)}


def collectstatic(static_root) -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "mastra_site.settings", "PYTHONPATH": str(ROOT),
           **production_env(static_root)}
    proc = subprocess.run([sys.executable, "manage.py", "collectstatic", "--noinput"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def get(url: str):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.headers, response.read()


#: the chat page's ES modules: every one of them is loaded by the page
CHAT_MODULES = tuple(sorted(f"chat/{path.name}" for path in (ROOT / "chat" / "static" / "chat").glob("*.js")))
IMPORT = re.compile(r"""^import [^;]*? from "\./([^"]+)";$""", re.MULTILINE)


def module_imports(source: str) -> list[str]:
    return sorted(IMPORT.findall(source))


def hashed_basename(manifest: dict, name: str) -> str:
    hashed = manifest[name]
    assert re.fullmatch(re.escape(name[:-3]) + r"\.[0-9a-f]{12}\.js", hashed), hashed
    return hashed.rsplit("/", 1)[1]


def hashed_imports(source: str, manifest: dict) -> str:
    """``source`` with each ``from "./x.js";`` naming x's hashed file (what collectstatic writes)."""
    def rewrite(m: re.Match) -> str:
        return m.group(0).replace(f'"./{m.group(1)}"', f'"./{hashed_basename(manifest, "chat/" + m.group(1))}"')

    return IMPORT.sub(rewrite, source)


def test_daphne_alone_serves_the_collected_static_files(db_url_for_subprocess, tmp_path):
    static_root = tmp_path / "static"
    collectstatic(static_root)
    manifest = json.loads((static_root / "staticfiles.json").read_text())["paths"]
    assert re.fullmatch(r"chat/chat\.[0-9a-f]{12}\.css", manifest["chat/chat.css"])
    orm(lambda: get_user_model().objects.create_user("ann", password=PASSWORD))

    with daphne_server(db_url_for_subprocess, tmp_path, asgi=True, **production_env(static_root)) as base:
        # the hashed files: their type, and cached for a year (their name changes with their content)
        status, headers, body = get(f"{base}/static/{manifest['chat/chat.css']}")
        assert (status, headers["Content-Type"], headers["Cache-Control"]) == (200, 'text/css; charset="utf-8"', YEAR)
        assert body == (ROOT / "chat" / "static" / "chat" / "chat.css").read_bytes()
        for name in CHAT_MODULES:
            status, headers, body = get(f"{base}/static/{manifest[name]}")
            assert (status, headers["Content-Type"], headers["Cache-Control"]) == (
                200, 'text/javascript; charset="utf-8"', YEAR), name
            # each module names the others by their hashed names, and is otherwise its source
            source = (ROOT / "chat" / "static" / name).read_text()
            assert body.decode() == hashed_imports(source, manifest), name
        entry = get(f"{base}/static/{manifest['chat/chat.js']}")[2].decode()
        assert module_imports(entry) == sorted(hashed_basename(manifest, f"chat/{module}") for module in (
            "api.js", "panels.js", "render.js", "socket.js", "state.js", "voice.js"))
        render = get(f"{base}/static/{manifest['chat/render.js']}")[2].decode()
        assert module_imports(render) == sorted(hashed_basename(manifest, f"chat/{module}")
                                                for module in ("markdown.js", "state.js"))

        with chromium(tmp_path) as browser:
            page = browser.new_page()
            statics = []
            page.on("response", lambda r: statics.append((r.url[len(base):], r.status, r.headers.get("cache-control")))
                    if r.url.startswith(base + "/static/") else None)
            sign_in(page, base)
            # the page names the hashed files, and its style sheet applies
            assert page.get_attribute("link[rel=stylesheet]", "href") == "/static/" + manifest["chat/chat.css"]
            assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(246, 247, 249)"
            pick_bot(page)
            say(page, "hello from production")
            wait_text(page, 0, "echo: hello from production")
            # every module by its hashed name (the preloads and the imports agree), none by its plain
            # name, each cached for a year
            # (the browser fetches the site's favicon when it likes: checked by name below)
            favicon = "/static/" + manifest["favicon.svg"]
            assert {s for s in statics if s[0] != favicon} == {("/static/" + manifest[name], 200, YEAR)
                                                               for name in ("chat/chat.css", "chat/voice.css",
                                                                            *CHAT_MODULES)}
            assert page.get_attribute("link[rel=icon]", "href") == favicon
            assert get(base + favicon)[:2][0] == 200
            # /favicon.ico, which browsers ask for whatever a page links, leads to the same icon
            assert get(base + "/favicon.ico")[::2] == (200, (ROOT / "static" / "favicon.svg").read_bytes())

            # Swagger UI (signed in) loads its files from the site's static files
            statics.clear()
            page.goto(base + "/api/docs/")
            page.wait_for_selector(".swagger-ui .info .title")
            sidecar = {url: status for url, status, _ in statics if "drf_spectacular_sidecar" in url}
            assert sidecar == {"/static/" + manifest[f"drf_spectacular_sidecar/swagger-ui-dist/{name}"]: 200
                               for name in ("swagger-ui.css", "swagger-ui-bundle.js",
                                            "swagger-ui-standalone-preset.js", "favicon-32x32.png")}


def test_before_collectstatic_pages_name_the_files_as_they_are(tmp_path, settings):
    """Django's test runner and ``runserver`` without ``DEBUG`` have no manifest: the plain name,
    which ``runserver`` serves from the apps' folders, not an error on every ``{% static %}``."""
    from mastra_site.staticfiles import StaticFilesStorage

    assert settings.DEBUG is False
    assert StaticFilesStorage(location=tmp_path).url("chat/chat.css") == "/static/chat/chat.css"
    (tmp_path / "staticfiles.json").write_text(json.dumps(
        {"version": "1.1", "paths": {"chat/chat.css": "chat/chat.0123456789ab.css"}}))
    assert StaticFilesStorage(location=tmp_path).url("chat/chat.css") == "/static/chat/chat.0123456789ab.css"


def test_every_middleware_runs_on_the_async_path(settings):
    """A sync-only middleware would make every ASGI request a sync one (a thread hop each), and a
    task a view starts would inherit an executor that is gone once the request ends."""
    from django.utils.module_loading import import_string

    sync_only = [path for path in settings.MIDDLEWARE if not getattr(import_string(path), "async_capable", False)]
    assert sync_only == []


def test_favicon_ico_redirects_to_the_sites_icon(client):
    response = client.get("/favicon.ico")
    assert (response.status_code, response["Location"]) == (301, "/static/favicon.svg")
    assert client.post("/favicon.ico").status_code == 405
