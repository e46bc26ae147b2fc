"""Daphne's TCP writes sent at once when nothing waits to be sent.

Daphne serves through Twisted, whose TCP transport never writes in ``write``: it buffers the bytes,
asks the reactor to watch the socket for writing, sends them on the reactor's next turn and stops
watching. On Daphne's asyncio reactor each watch and unwatch is an ``add_writer`` /
``remove_writer`` on the event loop (an epoll change each), and the send is one more callback: per
websocket frame. Measured with ``bench/websocket.py --cases redis`` (1,000 sockets, 20,000 frames a
second over two processes, py-spy with ``--gil``): 15 % of a daphne process's time went to the
watching alone.

:func:`tcp_write_through` makes a plain TCP connection send in ``write`` when its buffer is empty,
as asyncio's own transports do: what the socket takes leaves at once, and only what it does not
take (a full socket buffer, an error) goes Twisted's way, buffered behind the reactor's watch. Bytes
keep their order: anything already buffered sends the new bytes Twisted's way too. A connection
closing or a TLS connection (``startTLS``) keeps Twisted's own ``write``. A registered producer
(Twisted's HTTP channel stays one after the websocket handshake) changes nothing: bytes sent at once
never fill the buffer it would be paused for. Twisted's HTTP channel sets ``TCP_NODELAY``, so an HTTP
response's head and body, now two sends, are not held back by Nagle's algorithm.

It runs when the ASGI application is built (``mastra_site.asgi``); with a Twisted whose connection
lacks what it relies on, it leaves Twisted alone.
"""

from __future__ import annotations

import functools
from typing import Any

#: what the write-through relies on in ``twisted.internet.tcp.Connection`` (besides the buffer list,
#: ``_tempDataBuffer``, that a connection makes when built)
_RELIES_ON = ("write", "writeSomeData", "dataBuffer", "offset", "connected", "disconnecting",
              "_writeDisconnected", "TLS")


def write_through(original):
    """``Connection.write`` that sends at once when nothing is buffered, else ``original``."""

    @functools.wraps(original)
    def write(self, data: Any) -> None:
        if (type(data) is not bytes or not data or self.TLS or not self.connected or self.disconnecting
                or self._writeDisconnected or self._tempDataBuffer
                or self.offset < len(self.dataBuffer)):
            return original(self, data)
        sent = self.writeSomeData(data)
        if isinstance(sent, Exception) or sent <= 0:
            # nothing sent: the reactor's write finds the error (or the room) the usual way
            return original(self, data)
        if sent < len(data):
            original(self, data[sent:])

    write.write_through = True
    return write


def tcp_write_through() -> bool:
    """Give Twisted's TCP connections the write-through ``write``; True when they have it."""
    try:
        from twisted.internet import tcp
    except ImportError:
        return False
    connection = tcp.Connection
    if getattr(connection.write, "write_through", False):
        return True
    if not all(hasattr(connection, name) for name in _RELIES_ON):
        return False
    connection.write = write_through(connection.write)
    return True


__all__ = ["tcp_write_through", "write_through"]
