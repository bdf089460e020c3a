"""A loopback TCP proxy in front of the test PostgreSQL, to break the link on purpose.

Modes, switched at any time with ``proxy.mode = ...``, for open and new connections:
``pass`` forwards both ways; ``stall`` stops forwarding without a reset (bytes are read and
dropped, sockets stay open: the client's kernel keeps getting ACKs, as behind a proxy or
load balancer); ``mute`` (``mute_open()``: the open connections only) forwards to the
server but drops its replies (a COMMIT lands, its answer never arrives); ``drop`` closes
both sides (FIN); ``reset`` aborts them (RST, through SO_LINGER 0). A connection that saw
a stall or mute stays broken after ``pass``.
"""

from __future__ import annotations

import asyncio
import socket
import struct
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

Mode = Literal["pass", "stall", "mute", "drop", "reset"]
_COMMIT_DONE = b"C\x00\x00\x00\x0bCOMMIT\x00"  # CommandComplete("COMMIT") in the wire protocol
_READY = b"Z\x00\x00\x00\x05"  # ReadyForQuery, then its transaction status (I: idle)


def _autocommit_write(sent: bytes) -> bool:
    """A client message that writes and commits by itself (no BEGIN with it)."""
    return b"INSERT INTO" in sent and b"BEGIN" not in sent


class PgProxy:
    def __init__(self, dsn: str) -> None:
        parts = urlsplit(dsn)
        self._dsn = parts
        self._upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self._mode: Mode = "pass"
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self.port = 0

    @property
    def dsn(self) -> str:
        """The same database, through this proxy."""
        auth = f"{self._dsn.username}@" if self._dsn.username else ""
        netloc = f"{auth}127.0.0.1:{self.port}"
        return urlunsplit(self._dsn._replace(netloc=netloc))

    @property
    def mode(self) -> Mode:
        return self._mode

    @mode.setter
    def mode(self, mode: Mode) -> None:
        self._mode = mode
        for link in list(self._links):
            link.apply(mode)

    def mute_after_commit(self) -> None:
        """On the connections open now, pass the server's replies up to its next ``COMMIT``
        done, then drop that and every later reply (a transaction lands, its answer never
        arrives, whatever the client sent before it); new ones pass. A write sent outside a
        transaction (an ``INSERT`` that commits on its own) counts as a ``COMMIT``: its
        reply and all after it are dropped."""
        for link in list(self._links):
            link.mute_after_commit = True

    def mute_open(self) -> None:
        """Drop the server's replies on the connections open now; new ones pass."""
        for link in list(self._links):
            link.apply("mute")

    async def __aenter__(self) -> PgProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for link in list(self._links):
            link.apply("drop")
        await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = _Link(writer)
        self._links.add(link)
        try:
            link.apply(self._mode)
            if link.closed:
                return
            up_reader, up_writer = await asyncio.open_connection(*self._upstream)
            link.upstream = up_writer
            link.apply(self._mode)
            await asyncio.gather(
                link.pump(reader, up_writer, replies=False),
                link.pump(up_reader, writer, replies=True),
                return_exceptions=True,
            )
        finally:
            link.apply("drop")
            self._links.discard(link)


class _Link:
    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.broken_to_server = False
        self.broken_to_client = False
        self.mute_after_commit = False
        self.idle = True  # the server's last ReadyForQuery said: no transaction open
        self.closed = False

    def apply(self, mode: Mode) -> None:
        if self.closed:
            return
        if mode == "stall":
            self.broken_to_server = self.broken_to_client = True
        elif mode == "mute":
            self.broken_to_client = True
        elif mode in ("drop", "reset"):
            self.closed = True
            if mode == "reset":
                sock = self.client.get_extra_info("socket")
                if sock is not None:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            for w in (self.client, self.upstream):
                if w is not None:
                    w.close()

    async def pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, replies: bool
    ) -> None:
        while not self.closed:
            data = await reader.read(65536)
            if not data:
                self.apply("drop")
                return
            if self.broken_to_client if replies else self.broken_to_server:
                continue  # read and dropped: the sender's kernel sees its bytes acknowledged
            if replies and self.mute_after_commit and _COMMIT_DONE in data:
                data = data[: data.index(_COMMIT_DONE)]  # what came before still arrives
                self.broken_to_client = True
            if replies and _READY in data:
                self.idle = data[data.rindex(_READY) + len(_READY) :][:1] == b"I"
            if not replies and self.mute_after_commit and self.idle and _autocommit_write(data):
                self.broken_to_client = True  # it lands on its own; its reply is lost
            writer.write(data)
            await writer.drain()
