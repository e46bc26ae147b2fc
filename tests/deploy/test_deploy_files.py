"""The deploy files agree with each other and with the site: the systemd units run the Procfile's
commands, the env file names settings the site reads, nginx proxies what the site serves the way it
expects. ``systemd-analyze verify`` and ``nginx -t`` check the files where those programs are
installed (the test is skipped, never failed, where they are not)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.deploy.units import (ENV_EXAMPLE, ENV_FILE, HOME, NGINX, ROOT, STATE, UNIT_OF, UNITS, env_file,
                                procfile, procfile_as_unit_command, procfile_defaults, units)


def test_there_is_a_unit_for_each_process_type_of_the_procfile():
    assert sorted(procfile()) == ["beat", "web", "worker"]
    assert sorted(units()) == sorted(UNIT_OF.values())


@pytest.mark.parametrize("process", sorted(UNIT_OF))
def test_each_unit_runs_its_procfile_command_from_the_virtualenv(process):
    command = procfile()[process]
    unit = units()[UNIT_OF[process]]
    words = procfile_as_unit_command(command)
    assert unit.one("ExecStart").split() == [f"{HOME}/venv/bin/{words[0]}", *words[1:]]
    # the unit's Environment= holds the Procfile's defaults (the env file may override them)
    defaults = {name: value for name, value in procfile_defaults(command).items() if name != "PORT"}
    environment = unit.environment()
    for name, value in defaults.items():
        if name == "CELERY_BEAT_SCHEDULE_FILE":  # a writable place of its own, the same file name
            assert environment[name] == f"{STATE}/{value}"
        else:
            assert environment[name] == value, name


def test_the_web_unit_is_a_template_by_port():
    web = units()["mastra-web@.service"]
    assert " -p %i " in web.one("ExecStart")
    assert web.environment()["BIND"] == "127.0.0.1"


@pytest.mark.parametrize("name", sorted(UNIT_OF.values()))
def test_each_unit_runs_as_the_site_user_with_the_env_file_restarts_and_is_confined(name):
    unit = units()[name]
    assert (unit.one("User"), unit.one("Group")) == ("mastra", "mastra")
    assert unit.one("WorkingDirectory") == f"{HOME}/app"
    assert unit.one("EnvironmentFile") == ENV_FILE
    assert unit.one("Restart") == "always"
    assert {key: unit.one(key) for key in ("NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp",
                                           "PrivateDevices", "RestrictSUIDSGID")} == {
        "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
        "PrivateDevices": "yes", "RestrictSUIDSGID": "yes"}
    assert unit.one("CapabilityBoundingSet") == ""
    # ProtectSystem=strict: only beat writes (its schedule), in its StateDirectory
    assert unit.get("StateDirectory") == (["mastra"] if name == "mastra-beat.service" else [])
    assert unit.one("WantedBy", "Install") == "multi-user.target"


def test_the_web_sizes_are_the_chat_frame_limit_plus_64_kib(settings):
    web = procfile()["web"].split()
    sizes = {web[web.index(flag) + 1] for flag in ("--websocket-max-message-size", "--websocket-max-frame-size")}
    assert sizes == {str(settings.MASTRA_CHAT_MAX_FRAME_BYTES + 65536)} == {"1179648"}
    assert "--proxy-headers" in web


def test_every_variable_of_the_env_example_is_one_the_site_or_a_unit_reads():
    readme = (ROOT / "README.md").read_text()
    names = set(env_file(ENV_EXAMPLE)) | set(re.findall(r"^# ([A-Z][A-Z0-9_]+)=", ENV_EXAMPLE.read_text(), re.M))
    unit_names = {name for unit in units().values() for name in unit.environment()}
    unknown = sorted(name for name in names if f"`{name}`" not in readme and name not in unit_names)
    assert unknown == []
    example = env_file(ENV_EXAMPLE)
    # what a production site must set is set (the secret and the passwords as placeholders)
    assert {key: example[key] for key in ("DEBUG", "SECURE_PROXY_SSL_HEADER", "SECURE_SSL_REDIRECT",
                                          "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "STATIC_ROOT")} == {
        "DEBUG": "false", "SECURE_PROXY_SSL_HEADER": "X-Forwarded-Proto", "SECURE_SSL_REDIRECT": "true",
        "SESSION_COOKIE_SECURE": "true", "CSRF_COOKIE_SECURE": "true", "STATIC_ROOT": f"{HOME}/static"}
    assert example["SECRET_KEY"] == "replace-me"
    assert example["DATABASE_URL"].startswith("postgres://") and example["REDIS_URL"].startswith("redis://")
    # a value systemd and sh read alike: no quotes, no `$`, no spaces
    assert [value for value in example.values() if re.search(r"[\"'$\s]", value)] == []


def test_the_env_example_is_accepted_by_the_settings_and_the_deploy_checks(tmp_path):
    env = {**env_file(ENV_EXAMPLE), "SECRET_KEY": "k" * 20 + "0123456789abcdefghijklmnopqrstuvwxyz", "PATH": "/usr/bin:/bin",
           "DATABASE_URL": "postgres://mastra@127.0.0.1:1/mastra", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "manage.py", "check", "--deploy", "--fail-level", "ERROR"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # HSTS's includeSubDomains and preload are the operator's decision (docs/deployment.md): nothing else
    assert re.findall(r"\((\w+\.\w+)\)", proc.stderr + proc.stdout) == ["security.W005", "security.W021"]


# -- nginx -----------------------------------------------------------------------------------------
def nginx_directives(name: str) -> list[str]:
    return re.findall(rf"^\s*{name}\s+([^;]+);", NGINX.read_text(), re.M)


def test_nginx_takes_the_bodies_the_api_takes(settings):
    (size,) = nginx_directives("client_max_body_size")
    units_of = {"k": 1024, "m": 1024 * 1024}
    assert int(size[:-1]) * units_of[size[-1]] == settings.MASTRA_API_MAX_BODY == 1048576


def test_nginx_streams_every_sse_route_of_the_api_unbuffered():
    """The SSE routes of docs/api.md (answer ``SSE…``) match the unbuffered location; no other route does."""
    api = (ROOT / "docs" / "api.md").read_text()
    sse = re.findall(r"^\| `POST (/api/agents/<id>/[a-z/-]+)` \|[^\n]*\| SSE", api, re.M)
    assert sorted(sse) == ["/api/agents/<id>/approve-tool-call", "/api/agents/<id>/decline-tool-call",
                           "/api/agents/<id>/stream", "/api/agents/<id>/threads/subscribe"]
    text = NGINX.read_text()
    (pattern,) = re.findall(r"location ~ (\^/api/[^ ]+) \{", text)
    block = text[text.index(pattern):].split("}", 1)[0]
    assert "proxy_buffering off;" in block and "proxy_read_timeout 1h;" in block
    assert [path for path in sse if not re.fullmatch(pattern, path.replace("<id>", "ops-assistant"))] == []
    for other in ("generate", "send-message", "approve-tool-call-generate", "threads/queue"):
        assert not re.fullmatch(pattern, f"/api/agents/ops-assistant/{other}"), other


def test_nginx_upgrades_the_chat_websocket_and_forwards_what_the_site_reads():
    text = NGINX.read_text()
    ws = text[text.index("location /ws/"):].split("}", 1)[0]
    for line in ("proxy_set_header Upgrade $http_upgrade;", "proxy_set_header Connection $mastra_connection;",
                 "proxy_set_header Host $host;", "proxy_set_header X-Forwarded-Proto $scheme;"):
        assert line in ws, line
    # SECURE_PROXY_SSL_HEADER=X-Forwarded-Proto, and daphne --proxy-headers reads X-Forwarded-For
    assert env_file(ENV_EXAMPLE)["SECURE_PROXY_SSL_HEADER"] == "X-Forwarded-Proto"
    assert nginx_directives("proxy_set_header").count("X-Forwarded-Proto $scheme") == 4  # 2 probes, server, /ws/
    assert nginx_directives("proxy_set_header").count("X-Forwarded-For $remote_addr") == 4
    # the static files come from STATIC_ROOT
    assert nginx_directives("alias") == [env_file(ENV_EXAMPLE)["STATIC_ROOT"] + "/"]
    assert re.findall(r"server (127\.0\.0\.1:\d+);", text) == ["127.0.0.1:8001", "127.0.0.1:8002"]


def test_nginx_caches_exactly_the_hashed_static_names_for_a_year():
    (pattern,) = re.findall(r'location ~ "([^"]+)"', NGINX.read_text())
    assert re.search(pattern, "/static/chat/chat.0123456789ab.css")
    assert re.search(pattern, "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.fedcba987654.js")
    assert not re.search(pattern, "/static/chat/chat.css")
    assert not re.search(pattern, "/static/staticfiles.json")
    assert 'add_header Cache-Control "max-age=315360000, public, immutable";' in NGINX.read_text()


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    import datetime

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "mastra.example.com")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now)
            .not_valid_after(now + datetime.timedelta(days=1)).sign(key, hashes.SHA256()))
    cert_path, key_path = directory / "fullchain.pem", directory / "privkey.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


def test_nginx_accepts_the_site_config(tmp_path):
    nginx = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if Path(p).exists()), None)
    if nginx is None:
        pytest.skip("nginx is not installed (apt-get install nginx-light)")
    cert, key = self_signed_certificate(tmp_path)
    site = (NGINX.read_text().replace("/etc/letsencrypt/live/mastra.example.com/fullchain.pem", str(cert))
            .replace("/etc/letsencrypt/live/mastra.example.com/privkey.pem", str(key)))
    assert str(cert) in site and str(key) in site
    (tmp_path / "site.conf").write_text(site)
    mime = "include /etc/nginx/mime.types;" if Path("/etc/nginx/mime.types").exists() else ""
    (tmp_path / "nginx.conf").write_text(
        f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
        f"http {{\n{mime}\naccess_log off;\nclient_body_temp_path {tmp_path}/body;\nproxy_temp_path {tmp_path}/proxy;\n"
        f"include {tmp_path}/site.conf;\n}}\n")
    proc = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "test is successful" in proc.stderr


def test_systemd_accepts_the_units(tmp_path):
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    venv = Path(sys.executable).parent.parent  # a virtualenv that has daphne and celery, for /srv/mastra/venv
    for path in UNITS.glob("*.service"):
        (tmp_path / path.name).write_text(path.read_text().replace(f"{HOME}/venv", str(venv)))
    proc = subprocess.run([analyze, "verify", *(str(tmp_path / name) for name in
                                               ("mastra-web@8001.service", "mastra-worker.service", "mastra-beat.service"))],
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)
    # verify exits 0 on unknown keys and bad values too: it must say nothing at all
    assert (proc.returncode, proc.stdout + proc.stderr) == (0, "")
