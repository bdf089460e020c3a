"""One bounded GET for the web tools: what a fetch may reach and how much it may read.

Every limit holds while the body streams in, not after: the byte cap counts decoded bytes
(a gzip body is inflated a bounded slice at a time, so a small compressed bomb stops at the
cap), the timeout covers the whole exchange (a server dripping a byte a second cannot keep
the call alive), and redirects are followed up to a fixed number of hops, each hop checked
again. Only ``http`` and ``https`` URLs are fetched. Private and loopback addresses are
reachable by default, as in lovia 0.9.119; ``allow_private=False`` refuses them, checking
the name before connecting and the address the connection reached before sending a byte.
"""

from __future__ import annotations

import asyncio
import codecs
import ipaddress
import json
import re
import socket
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._current_call import idempotency_headers
from .._version import __version__
from ..errors import ToolError
from ..http_config import resolve_verify

if TYPE_CHECKING:  # imported when a fetch runs: `import lovia` stays light
    import httpx

__all__ = [
    "MAX_RESPONSE_BYTES",
    "Inflater",
    "RawResponse",
    "check_url",
    "compact_json",
    "decode_text",
    "fetch",
    "payload_text",
    "shown_media_type",
]

MAX_RESPONSE_BYTES = 1_000_000
"""The default cap on the bytes a fetch reads, after decompression."""

USER_AGENT = f"Mozilla/5.0 (compatible; lovia/{__version__})"
_SCHEME_HINT = "Only http:// and https:// URLs can be fetched."
_ABSOLUTE_HINT = "Give an absolute URL such as https://example.com/page."
_BINARY_PREFIXES = ("image/", "video/", "audio/", "font/")
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([\w.:+-]+)""", re.IGNORECASE)
# a well-formed type/subtype; the status line is lovia's, so a header that is not one is
# shown as "unknown" rather than echoed outside the fence
# codecs Python has that are not for documents: hostnames (punycode decodes in quadratic
# time, a megabyte takes minutes; idna refuses errors="replace") and one that always fails
_NOT_DOCUMENT_CODECS = frozenset({"idna", "punycode", "undefined"})
_MEDIA_TYPE = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}", re.I)


@dataclass
class RawResponse:
    """A response as read off the wire, before any interpretation of its body."""

    url: str
    status_code: int
    media_type: str
    body: bytes = b""
    charset: str | None = None
    size_capped: bool = False


def check_url(url: str) -> None:
    """Raise a ``ToolError`` the model can act on unless ``url`` is an http(s) URL."""
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise ToolError(f"not a valid URL: {url!r} ({exc})", hint=_ABSOLUTE_HINT) from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ToolError(f"Unsupported URL scheme: {scheme or '(none)'!r}.", hint=_SCHEME_HINT)
    if not parts.hostname:
        raise ToolError(f"the URL {url!r} names no host", hint=_ABSOLUTE_HINT)


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")


def _is_public(text: str) -> bool:
    """Whether ``text`` (an IP address, maybe with a ``%zone``) is a public address; an IPv6
    address that carries an IPv4 one (mapped, 6to4, NAT64, IPv4-compatible) needs both."""
    address = ipaddress.ip_address(text.split("%")[0])
    if not address.is_global:
        return False
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour
        if inner is None and (address in _NAT64 or address in _IPV4_COMPATIBLE):
            inner = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if inner is not None and not inner.is_global:
            return False
    return True


def _refusal(url: httpx.URL, host: str, address: str) -> ToolError:
    return ToolError(
        f"refused to fetch {url}: {host} is a private or local address ({address})",
        hint="This tool may only read public web addresses.",
    )


async def _refuse_private(request: httpx.Request) -> None:
    """An httpx request hook: refuse a host that resolves to a non-public address.

    Runs for the first request and for every redirect hop. The name is resolved again when
    the connection opens (a host may answer differently the second time: DNS rebinding),
    so the address the connection reached is checked too, before a byte is sent to it."""
    host = request.url.host
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ToolError(f"cannot resolve host {host!r}: {exc}") from exc
    for info in infos:
        if not _is_public(str(info[4][0])):
            raise _refusal(request.url, host, str(info[4][0]))
    request.extensions["trace"] = _PeerCheck(request.url)


class _PeerCheck:
    """An httpcore ``trace`` callback: once a connection to the request's own host is open
    (a proxy the operator set up is not checked), refuse it unless its peer is public."""

    def __init__(self, url: httpx.URL) -> None:
        self.url = url
        self.host = url.raw_host.decode("ascii").lower()
        self.direct = False

    async def __call__(self, event: str, info: dict[str, Any]) -> None:
        if event == "connection.connect_tcp.started":
            self.direct = str(info.get("host", "")).lower() == self.host
        elif event == "connection.connect_tcp.complete" and self.direct:
            stream = info["return_value"]
            peer = stream.get_extra_info("server_addr")
            address = str(peer[0]) if isinstance(peer, tuple) and peer else ""
            if not address or not _is_public(address):
                await stream.aclose()
                raise _refusal(self.url, self.url.host, address or "unknown")


async def _check_scheme(request: httpx.Request) -> None:
    check_url(str(request.url))


class Inflater:
    """Decode a ``Content-Encoding`` a bounded slice at a time (identity, gzip, deflate)."""

    def __init__(self, encoding: str) -> None:
        self._encoding = encoding
        self._raw_deflate = False
        self._z: zlib._Decompress | None = None
        if encoding in ("gzip", "x-gzip"):
            self._z = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif encoding == "deflate":
            self._z = zlib.decompressobj(zlib.MAX_WBITS)

    def feed(self, chunk: bytes, room: int) -> bytes:
        """At most ``room`` decoded bytes of ``chunk`` (what is left over is kept)."""
        if self._z is None:
            return chunk[:room]
        try:
            out = self._z.decompress(chunk, room)
        except zlib.error:
            if self._encoding != "deflate" or self._raw_deflate:
                raise
            # some servers send a raw deflate stream without the zlib header
            self._raw_deflate = True
            self._z = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._z.decompress(chunk, room)
        while len(out) < room and self._z.unconsumed_tail:
            out += self._z.decompress(self._z.unconsumed_tail, room - len(out))
        return out

    def pending(self) -> bool:
        return bool(self._z is not None and self._z.unconsumed_tail)


async def _read(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], max_bytes: int
) -> RawResponse:
    import httpx

    async with client.stream("GET", url, headers=headers) as resp:
        encoding = resp.headers.get("content-encoding", "identity").strip().lower()
        inflater = Inflater(encoding)
        body = bytearray()
        capped = False
        try:
            async for chunk in resp.aiter_raw():
                # one byte more than the cap tells "exactly the cap" from "more than the cap"
                body += inflater.feed(chunk, max_bytes + 1 - len(body))
                if len(body) > max_bytes or inflater.pending():
                    capped = True
                    break
        except httpx.StreamConsumed:
            # already read and decoded (a mock transport, an event hook that read it)
            body = bytearray(resp.content[: max_bytes + 1])
            capped = len(body) > max_bytes
        except zlib.error as exc:
            raise ToolError(f"the {encoding} body of {resp.url} is corrupt: {exc}") from exc
        return RawResponse(
            url=str(resp.url),
            status_code=resp.status_code,
            media_type=resp.headers.get("content-type", "").split(";")[0].strip().lower(),
            body=bytes(body[:max_bytes]),
            charset=resp.charset_encoding,
            size_capped=capped,
        )


async def fetch(
    url: str,
    *,
    headers: dict[str, str],
    timeout: float,
    max_bytes: int,
    max_redirects: int,
    allow_private: bool,
) -> RawResponse:
    """GET ``url`` within the limits; network failures become ``ToolError``s."""
    import httpx

    check_url(url)
    hooks = [_check_scheme] if allow_private else [_check_scheme, _refuse_private]
    request_headers = {"Accept-Encoding": "gzip, deflate", **idempotency_headers(), **headers}
    async with httpx.AsyncClient(
        timeout=timeout,
        follow_redirects=True,
        max_redirects=max_redirects,
        verify=resolve_verify(),
        event_hooks={"request": list(hooks)},
    ) as client:
        try:
            return await asyncio.wait_for(_read(client, url, request_headers, max_bytes), timeout)
        except (asyncio.TimeoutError, httpx.TimeoutException) as exc:
            raise ToolError(
                f"fetching {url} took longer than {timeout:g} s",
                hint="The server is slow or the page is large; try again later or another URL.",
            ) from exc
        except httpx.TooManyRedirects as exc:
            raise ToolError(
                f"{url} redirected more than {max_redirects} times",
                hint="The address loops; fetch the final page's URL directly if you know it.",
            ) from exc
        except httpx.UnsupportedProtocol as exc:
            raise ToolError(f"cannot fetch {url}: {exc}", hint=_SCHEME_HINT) from exc
        except httpx.InvalidURL as exc:  # not an HTTPError: the URL, or a redirect's, is bad
            raise ToolError(f"cannot fetch {url}: {exc}", hint=_ABSOLUTE_HINT) from exc
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise ToolError(
                f"could not fetch {url}: {reason}",
                hint="A network problem, not a bad page: check the address or try again.",
            ) from exc


def decode_text(body: bytes, charset: str | None, *, sniff_meta: bool = False) -> str:
    """``body`` as text: the declared charset, else a ``<meta charset>`` (``sniff_meta``),
    else UTF-8; undecodable bytes become U+FFFD and an unknown codec name (or one that is
    not for documents, such as ``punycode``) is skipped."""
    candidates = [charset]
    if sniff_meta and (found := _META_CHARSET.search(body[:4096])):
        candidates.append(found.group(1).decode("ascii", "replace"))
    for name in candidates:
        if not name:
            continue
        try:
            if codecs.lookup(name).name in _NOT_DOCUMENT_CODECS:
                continue
            return body.decode(name, errors="replace")
        except (LookupError, ValueError):  # unknown, not a text codec, or it gave up
            pass
    return body.decode("utf-8", errors="replace")


def compact_json(text: str) -> str:
    """``text`` re-serialised without insignificant whitespace, or as given if not JSON."""
    try:
        return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))
    except ValueError:
        return text


def payload_text(raw: RawResponse) -> str:
    """The text the model reads for a non-HTML body: JSON compacted, text as is, binary as
    a one-line description (its type and size)."""
    media = raw.media_type
    if "json" in media:
        return compact_json(decode_text(raw.body, raw.charset))
    declared_binary = media.startswith(_BINARY_PREFIXES) or media == "application/octet-stream"
    textual = media.startswith("text/") or media.endswith("+xml")
    if textual or (not declared_binary and b"\0" not in raw.body[:1024]):
        return decode_text(raw.body, raw.charset)
    return f"(binary content not shown: {media or 'unknown type'}, {len(raw.body)} bytes)"


def shown_media_type(media_type: str) -> str:
    """``media_type`` if it is a well-formed MIME type, else ``"unknown"``."""
    return media_type if _MEDIA_TYPE.fullmatch(media_type) else "unknown"
