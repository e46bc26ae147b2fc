"""Daphne's requests skip Twisted's parse of form bodies (``mastra_site.daphne_requests``): a POST
reaches the application with its body as sent, and Twisted neither reads its ``Content-Type``
through the email package nor fills ``request.args`` from it."""

from __future__ import annotations

import io
from unittest import mock

from twisted.web import http


def daphne_request(request_class):
    channel = mock.Mock()  # Twisted's request asks its channel for the peer and host; Daphne for its server
    return request_class(channel, False)


def receive_form(request) -> None:
    request.content = io.BytesIO()
    request.content.write(b"username=ada&password=secret")  # as the channel writes a body it receives
    request.requestHeaders.setRawHeaders(b"content-type", [b"application/x-www-form-urlencoded"])
    request.requestReceived(b"POST", b"/login/?next=/chat/", b"HTTP/1.1")


def test_the_asgi_application_builds_daphnes_requests_without_form_parsing():
    import mastra_site.asgi  # noqa: F401 - building the application applies it
    from daphne.http_protocol import WebRequest

    from mastra_site.daphne_requests import daphne_skips_form_parsing

    assert daphne_request(WebRequest)._parsePOSTFormSubmission is False
    assert daphne_skips_form_parsing()  # again: already there, not wrapped twice
    assert not getattr(WebRequest.__init__.__wrapped__, "skips_form_parsing", False)


def test_a_form_post_keeps_its_body_and_twisted_parses_nothing():
    import mastra_site.asgi  # noqa: F401
    from daphne.http_protocol import WebRequest

    with mock.patch.object(WebRequest, "process") as process, \
            mock.patch.object(http, "_parseContentType", side_effect=AssertionError("parsed")) as parsed:
        request = daphne_request(WebRequest)
        receive_form(request)
    assert process.called and not parsed.called
    assert request.args == {b"next": [b"/chat/"]}  # the query string only, as Twisted always reads it
    assert request.content.read() == b"username=ada&password=secret"  # what Daphne hands the application


def test_twisteds_own_request_still_parses_forms():
    """What the switch turns off (so that the test above can fail): a plain Twisted request reads
    the form into ``args``."""

    class Plain(http.Request):
        def process(self):
            pass

    request = Plain(mock.Mock(), False)
    receive_form(request)
    assert request.args[b"username"] == [b"ada"]
