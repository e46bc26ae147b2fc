"""What each log line knows about where it was written (README, Configuration: ``LOG_FORMAT``).

``request_id``: one per HTTP request, the caller's ``X-Request-ID`` when it is sane (a proxy's id
keeps its lines together with the proxy's), else a new one; sent back in the response's
``X-Request-ID`` (:func:`with_request_id`, around the site's and the API's handlers in
``mastra_site.asgi``). ``run_id``/``thread_id``: the agent run executing in the task
(``agents.runtime.logcontext``). :class:`LogContextFilter` copies them onto each record, only when
known, for the JSON formatter (``LOG_FORMAT=json``).
"""

from __future__ import annotations

import logging
import re
from contextvars import ContextVar

from agents.runtime.logcontext import current_run
from agents.runtime.random_ids import uuid4_hex

REQUEST_ID: ContextVar[str | None] = ContextVar("mastra_request_id", default=None)
REQUEST_ID_HEADER = b"x-request-id"
#: a caller's id is kept when it is short and plain (a UUID, a proxy's trace id); anything else is replaced
SANE_REQUEST_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:=+/@-]{0,127}")


def request_id_from(headers) -> str:
    """The request's ``X-Request-ID`` (ASGI headers) when sane, else a new random id."""
    for name, value in headers:
        if name.lower() == REQUEST_ID_HEADER:
            text = value.decode("latin-1").strip()
            if SANE_REQUEST_ID.fullmatch(text):
                return text
            break
    return uuid4_hex()  # uuid.uuid4().hex's form, from the process's pool of random bytes


def with_request_id(app):
    """ASGI: each HTTP request of ``app`` runs with its request id set, and its response carries it."""

    async def asgi(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        request_id = request_id_from(scope.get("headers", ()))
        echoed = (b"X-Request-ID", request_id.encode("latin-1"))

        async def send_with_id(message):
            if message["type"] == "http.response.start":
                headers = [(n, v) for n, v in message.get("headers", ()) if n.lower() != REQUEST_ID_HEADER]
                message = {**message, "headers": [*headers, echoed]}
            await send(message)

        token = REQUEST_ID.set(request_id)
        try:
            return await app(scope, receive, send_with_id)
        finally:
            REQUEST_ID.reset(token)

    return asgi


class LogContextFilter(logging.Filter):
    """Adds ``request_id``, ``run_id`` and ``thread_id`` to a record when they are known."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = REQUEST_ID.get()
        if request_id is not None:
            record.request_id = request_id
        run = current_run()
        if run is not None:
            record.run_id = run[0]
            if run[1] is not None:
                record.thread_id = run[1]
        return True


__all__ = ["REQUEST_ID", "LogContextFilter", "request_id_from", "with_request_id"]
