"""Twisted's TCP writes go out at once when nothing is buffered (``mastra_site.tcp_writes``): a real
``twisted.internet.tcp.Connection`` on a real socket pair, with a reactor that records what it is
asked to watch."""

from __future__ import annotations

import socket

import pytest
from twisted.internet import main, tcp

from mastra_site.tcp_writes import tcp_write_through


class WatchRecorder:
    """The part of a reactor a connection's writes use: which descriptors it is asked to watch."""

    def __init__(self):
        self.calls: list[str] = []

    def addWriter(self, descriptor) -> None:
        self.calls.append("add")

    def removeWriter(self, descriptor) -> None:
        self.calls.append("remove")


class RecordingProtocol:
    def __init__(self):
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


@pytest.fixture()
def pair():
    tcp_write_through()
    ours, peer = socket.socketpair()
    reactor = WatchRecorder()
    connection = tcp.Connection(ours, RecordingProtocol(), reactor=reactor)
    connection.connected = True
    yield connection, peer, reactor
    ours.close()
    peer.close()


def received(peer: socket.socket) -> bytes:
    peer.setblocking(False)
    chunks = []
    while True:
        try:
            data = peer.recv(1 << 20)
        except BlockingIOError:
            return b"".join(chunks)
        if not data:
            return b"".join(chunks)
        chunks.append(data)


def drain(connection: tcp.Connection, peer: socket.socket) -> bytes:
    """What the reactor would do: write whenever the socket has room, until nothing is buffered."""
    got = [received(peer)]
    for _ in range(10_000):
        if not connection._tempDataBuffer and connection.offset >= len(connection.dataBuffer):
            break
        assert connection.doWrite() is None
        got.append(received(peer))
    return b"".join(got)


def test_the_asgi_application_gives_tcp_connections_the_write_through():
    import mastra_site.asgi  # noqa: F401 - building the application applies it

    assert getattr(tcp.Connection.write, "write_through", False)
    assert tcp_write_through()  # again: already there, not wrapped twice
    assert not getattr(tcp.Connection.write.__wrapped__, "write_through", False)


def test_a_write_with_nothing_buffered_leaves_at_once_without_a_watch(pair):
    connection, peer, reactor = pair
    connection.write(b"frame one")
    connection.write(b"frame two")
    assert received(peer) == b"frame one" + b"frame two"
    assert reactor.calls == []  # Twisted's own write: "add" now, the bytes and "remove" a turn later
    assert connection._tempDataBuffer == [] and connection.dataBuffer == b""


def test_what_a_full_socket_does_not_take_is_buffered_and_later_bytes_wait_behind_it(pair):
    connection, peer, reactor = pair
    big = bytes(range(256)) * 16_384  # 4 MiB: more than a socket pair's buffers hold
    connection.write(big)
    assert reactor.calls == ["add"]
    buffered = connection._tempDataLen
    assert 0 < buffered < len(big)
    connection.write(b"tail")  # the socket may have room again once read, but "tail" must not pass
    assert connection._tempDataLen == buffered + 4
    assert drain(connection, peer) == big + b"tail"
    assert reactor.calls == ["add", "add", "remove"]


def test_a_failed_send_goes_twisteds_way_and_the_reactor_sees_the_loss(pair):
    connection, peer, reactor = pair
    connection.socket.shutdown(socket.SHUT_WR)
    connection.write(b"frame")
    assert reactor.calls == ["add"] and connection._tempDataBuffer == [b"frame"]
    assert connection.doWrite() is main.CONNECTION_LOST


def test_a_closing_connection_keeps_twisteds_write(pair):
    connection, peer, reactor = pair
    connection.disconnecting = True
    connection.write(b"last words")
    assert reactor.calls == ["add"] and connection._tempDataBuffer == [b"last words"]
    assert received(peer) == b""


def test_a_tls_connection_keeps_twisteds_write(pair):
    connection, peer, reactor = pair
    connection.TLS = True
    connection.write(b"secret")
    assert connection.protocol.written == [b"secret"]  # to the TLS protocol, which encrypts
    assert received(peer) == b"" and reactor.calls == []


def test_a_write_that_is_not_bytes_is_refused_as_twisted_refuses_it(pair):
    connection, peer, reactor = pair
    with pytest.raises(TypeError):
        connection.write("text")
    connection.write(b"")
    assert received(peer) == b"" and reactor.calls == []
