"""autobahn's per-frame debug arguments are plain text (``mastra_site.autobahn_logging``): building
the ASGI application replaces its colouring helpers, and sending a frame no longer colours anything."""

from __future__ import annotations

from unittest import mock

import click


def test_the_asgi_application_makes_autobahns_log_arguments_plain():
    import mastra_site.asgi  # noqa: F401 - building the application applies it
    from autobahn.websocket import protocol

    from mastra_site.autobahn_logging import plain_type, plain_value

    assert protocol.hltype is plain_type and protocol.hlval is plain_value
    assert plain_type(protocol.WebSocketProtocol.sendData) == \
        "<autobahn.websocket.protocol.WebSocketProtocol.sendData>"
    assert plain_value(42) == "42" and plain_type(object()) == "<unknown>"


def test_sending_a_frame_colours_nothing():
    """The frame path of daphne's websocket protocol (``sendMessage`` → ``sendData``) with a fake
    transport: the bytes go out and click's ``style`` is never called."""
    import mastra_site.asgi  # noqa: F401
    from autobahn.twisted.websocket import WebSocketServerFactory, WebSocketServerProtocol
    from autobahn.websocket.protocol import TrafficStats

    proto = WebSocketServerProtocol()
    proto.factory = WebSocketServerFactory()
    for name in proto.CONFIG_ATTRS:  # what autobahn copies from the factory when a socket connects
        setattr(proto, name, getattr(proto.factory, name))
    proto.transport = mock.Mock()
    proto.state = WebSocketServerProtocol.STATE_OPEN
    proto.websocket_version = 13
    proto._perMessageCompress = None
    proto.send_queue = []
    proto.trafficStats = TrafficStats()
    proto.trackedTimings = None
    proto.peer = "tcp:127.0.0.1:1"
    with mock.patch.object(click, "style", side_effect=AssertionError("coloured")) as style:
        proto.sendMessage(b'{"type": "text-delta"}', isBinary=False)
    assert not style.called
    sent = b"".join(call.args[0] for call in proto.transport.write.call_args_list)
    assert sent.endswith(b'{"type": "text-delta"}') and sent[0] == 0x81  # one final text frame
