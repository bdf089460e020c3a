"""Serving the app with uvicorn: a connection must send a request's head in time, and read
what it is sent.

uvicorn times out a connection that idles between requests, but not one that opened and
sent nothing, or sent half a request line or half its headers and then trickles or waits:
each such connection would be held for as long as the client likes (and enough of them
exhaust the server). ``header_timeout_protocol(seconds)`` is uvicorn's HTTP protocol with
that deadline: a request whose head is not complete within ``seconds`` of its first byte
(or of the connection's opening) gets ``408`` and the connection is closed. The body has
its own deadline (``create_app(body_timeout=...)``).

A client that stops reading (a stream follower whose page froze, or a socket that never
reads) makes the server's writes back up: uvicorn then waits before sending more, for as long
as the client likes. With ``write_timeout``, a connection whose unsent bytes have stayed over
uvicorn's high-water mark (64 KiB) for that many seconds is dropped (a stream's client
reconnects and is sent what it missed); the run it followed never waits for it.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from typing import Any

__all__ = ["HEADER_TIMEOUT", "WRITE_TIMEOUT", "header_timeout_protocol"]

HEADER_TIMEOUT = 10.0
"""Seconds a client has to send a request's line and headers (``lovia web`` uses it)."""

WRITE_TIMEOUT = 30.0
"""Seconds a client may leave unread what the server sends it before it is dropped."""

_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: close with a reset
_TIMED_OUT = b"the request's headers did not arrive in time\n"
_RESPONSE_408 = (
    b"HTTP/1.1 408 Request Timeout\r\n"
    b"Content-Type: text/plain; charset=utf-8\r\n"
    b"Connection: close\r\n"
    b"Content-Length: " + str(len(_TIMED_OUT)).encode() + b"\r\n\r\n" + _TIMED_OUT
)


def header_timeout_protocol(  # noqa: C901 - one class
    seconds: float = HEADER_TIMEOUT, *, write_timeout: float = WRITE_TIMEOUT
) -> type[Any]:
    """uvicorn's HTTP/1.1 protocol class (httptools when installed, else h11) with a
    deadline of ``seconds`` for each request's head, and of ``write_timeout`` for a client
    to take what is sent to it; pass it as ``uvicorn.Config(http=...)``."""
    if not seconds > 0:
        raise ValueError(f"header timeout must be positive, got {seconds!r}")
    if not write_timeout > 0:
        raise ValueError(f"write timeout must be positive, got {write_timeout!r}")
    base: type[Any]
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

        base = HttpToolsProtocol
    except ImportError:  # httptools is optional: uvicorn's pure-Python h11 then
        from uvicorn.protocols.http.h11_impl import H11Protocol

        base = H11Protocol

    class HeaderDeadline(base):  # type: ignore[misc]
        # the cycle (uvicorn's request-response state) a pending deadline was armed under:
        # a new cycle means the head arrived; the same one when it fires means it did not
        _deadline: Any = None
        _armed: Any = None
        _stalled: Any = None  # the drop of a client that does not read, while armed

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            if self.cycle is None or self.cycle.response_complete:
                self._arm()  # a request is starting: its head has `seconds` to arrive
            super().data_received(data)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # the next request may have begun while this response was being sent
            if not self.transport.is_closing() and (
                self.cycle is None or self.cycle.response_complete
            ):
                self._arm()

        def connection_lost(self, exc: Exception | None) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            self._unstall()
            super().connection_lost(exc)

        def pause_writing(self) -> None:
            # the transport holds more than the high-water mark unsent: the client must take
            # some of it within write_timeout
            super().pause_writing()
            if self._stalled is None:
                self._stalled = self.loop.call_later(write_timeout, self._drop)

        def resume_writing(self) -> None:
            self._unstall()
            super().resume_writing()

        def _unstall(self) -> None:
            if self._stalled is not None:
                self._stalled.cancel()
                self._stalled = None

        def _drop(self) -> None:
            self._stalled = None
            sock = self.transport.get_extra_info("socket")
            if sock is not None:  # a reset: the kernel drops what it still holds for it too
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)
            self.transport.abort()  # close() would wait for the unread bytes to be sent

        def _arm(self) -> None:
            if self._deadline is not None and self._armed is self.cycle:
                return  # this head's deadline runs already (a trickle does not extend it)
            if self._deadline is not None:
                self._deadline.cancel()  # left from the previous request
            self._armed = self.cycle
            self._deadline = self.loop.call_later(seconds, self._expire, self.cycle)

        def _expire(self, armed: Any) -> None:
            self._deadline = None
            if self.cycle is not armed or self.transport.is_closing():
                return  # the head arrived (a request is being answered), or it is gone
            self.transport.write(_RESPONSE_408)
            self.transport.close()

    HeaderDeadline.__name__ = f"HeaderDeadline{base.__name__}"
    return HeaderDeadline
