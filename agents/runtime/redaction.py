"""What never leaves a run: credentials in error text, in stored options and in events, and the
provider's request bodies and response headers (docs/security.md).

Pure functions. ``redact_text`` runs on every ``ModelError`` message and on the error text of a run
(its ``error`` chunk and its record); ``options_for_storage`` on call options that are stored (a
suspended run's state, a queued input's stream options). The provider's payloads are kept out of
chunks by ``agents.runtime.run.payloads``.
"""

from __future__ import annotations

import re
from typing import Any


REDACTED = "[redacted]"

#: key names (compared without case, ``-`` and ``_``) whose values are credentials
CREDENTIAL_KEYS = frozenset({"apikey", "authorization", "proxyauthorization", "xapikey", "xgoogapikey", "password",
                             "secret", "token", "accesstoken", "secretkey", "clientsecret", "cookie", "headers"})

_PATTERNS = (
    # a password in a URL: scheme://user:password@host
    (re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]*:)[^/\s@]+@"), rf"\g<1>{REDACTED}@"),
    # Authorization-style values: Bearer / Basic tokens
    (re.compile(r"\b(Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE), rf"\g<1> {REDACTED}"),
    # provider keys: sk-…, sk-ant-…, Google's AIza…
    (re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"), f"sk-{REDACTED}"),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{20,}"), REDACTED),
    # query strings and forms: api_key=…, key=…, token=…, password=…
    (re.compile(r"\b((?:api[_-]?key|key|token|access[_-]?token|password|secret)=)[^\s\"'&,;}]+", re.IGNORECASE),
     rf"\g<1>{REDACTED}"),
    # key headers quoted in text: x-api-key: …, x-goog-api-key: …
    (re.compile(r"\b((?:x-api-key|api-key|x-goog-api-key)[\"']?\s*:\s*[\"']?)[^\s\"',;}]+", re.IGNORECASE),
     rf"\g<1>{REDACTED}"),
)


def redact_text(text: str) -> str:
    """``text`` with URL passwords, bearer tokens, ``sk-`` keys and ``key=value`` credentials
    replaced by ``[redacted]``."""
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def is_credential_key(name: Any) -> bool:
    return isinstance(name, str) and name.lower().replace("-", "").replace("_", "") in CREDENTIAL_KEYS


def strip_credentials(value: Any) -> Any:
    """A copy of ``value`` without the dict entries whose key names a credential (at any depth);
    URLs keep no password."""
    if isinstance(value, dict):
        return {k: strip_credentials(v) for k, v in value.items() if not is_credential_key(k)}
    if isinstance(value, list):
        return [strip_credentials(v) for v in value]
    if isinstance(value, str) and "://" in value and "@" in value:
        return redact_text(value)
    return value


def options_for_storage(options: dict) -> dict:
    """Call options as they may be stored: the ``model`` option keeps only what names the model
    (no key, no headers, no URL password), ``model_settings.headers`` goes, and credentials
    anywhere in ``provider_options`` go. The run that is going on keeps its own options."""
    out = dict(options)
    if isinstance(out.get("model"), dict):
        out["model"] = strip_credentials(out["model"])
    for name in ("model_settings", "provider_options"):
        if isinstance(out.get(name), dict):
            out[name] = strip_credentials(out[name])
    return out
