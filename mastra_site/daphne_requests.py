"""Daphne's HTTP requests without Twisted's parse of form bodies.

Daphne's request is Twisted's ``http.Request``, which, when a POST with a body arrives, parses its
``Content-Type`` (through the standard library's email package: 37 µs a request, measured) and,
for a form or a multipart upload, the whole body into ``request.args``. Daphne never reads
``args``: it hands the body to the ASGI application as it came, and Django parses it there. The
parse therefore cost every POST (an API call, a message sent, a webhook) time, and an upload twice
its memory, for nothing.

:func:`daphne_skips_form_parsing` builds Daphne's requests with ``parsePOSTFormSubmission=False``,
Twisted's own switch for it (its documentation: "This can use large amounts of memory for large
uploads"). It runs when the ASGI application is built (``mastra_site.asgi``); with a Daphne or a
Twisted that lacks the request class or the switch, it leaves them alone.
"""

from __future__ import annotations

import functools
import inspect


def daphne_skips_form_parsing() -> bool:
    """Make Daphne's ``WebRequest`` pass ``parsePOSTFormSubmission=False``; True when it does."""
    try:
        from daphne.http_protocol import WebRequest
        from twisted.web import http
    except ImportError:
        return False
    if getattr(WebRequest.__init__, "skips_form_parsing", False):
        return True
    if "parsePOSTFormSubmission" not in inspect.signature(http.Request.__init__).parameters:
        return False
    original = WebRequest.__init__

    @functools.wraps(original)
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("parsePOSTFormSubmission", False)
        original(self, *args, **kwargs)

    __init__.skips_form_parsing = True
    WebRequest.__init__ = __init__
    return True


__all__ = ["daphne_skips_form_parsing"]
