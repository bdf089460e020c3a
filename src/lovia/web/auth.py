"""Access control for the HTTP API: a shared token, as a Bearer header or a cookie.

The page cannot put headers on an ``EventSource``, so ``/?token=...`` sets an HttpOnly,
SameSite=Strict cookie once and the page then works from the cookie alone. Browsers send a
host's cookies to every port of it, so the cookie is named after the server's port (two
servers on one host keep their own) and ``SameOriginWrites`` refuses a state-changing
request that a page of another origin (another port included) sends with it. Scripts send
``Authorization: Bearer <token>``. With no token configured (loopback only) ``LoopbackOnly``
guards instead: a request must come from this machine (a loopback client address) and name
a loopback Host (a DNS-rebinding page names its own domain), and a state-changing one from
a page must come from a loopback Origin and not be marked by the browser as sent from
another origin (``Sec-Fetch-Site``): a page on another port of 127.0.0.1 is "same-site" for
a browser, and its Origin is a loopback one. Both let through the writes of a page whose
origin the app allows by name: ``create_app(cors_origins=[...])``, or a ``CORSMiddleware``
the app's owner added (``allow_origins``; a ``"*"`` there opens no writes).
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import secrets
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

__all__ = [
    "COOKIE_NAME",
    "TOKEN_COOKIE",
    "AllowedOrigins",
    "LoopbackOnly",
    "SameOriginWrites",
    "cookie_name",
    "cors_allowed_origins",
    "generate_token",
    "is_loopback",
    "token_dependency",
    "token_matches",
]

COOKIE_NAME = "lovia_token"
"""The cookie's name without a port (``cookie_name`` adds the server's)."""
TOKEN_COOKIE = COOKIE_NAME


def cookie_name(scope: Mapping[str, Any]) -> str:
    """The token cookie of the server that received ``scope``: ``lovia_token_<port>``."""
    server = scope.get("server")
    port = server[1] if server and len(server) > 1 and server[1] else None
    return COOKIE_NAME if port is None else f"{COOKIE_NAME}_{port}"


def generate_token() -> str:
    """A fresh random token (URL-safe, 32 bytes of entropy)."""
    return secrets.token_urlsafe(32)


@functools.lru_cache(maxsize=256)  # each request asks for its client and its Host
def is_loopback(host: str) -> bool:
    """True for ``127.0.0.1``, ``::1``, ``localhost`` and the rest of 127.0.0.0/8 (also
    written as ``::ffff:127.x.y.z``)."""
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped  # ::ffff:127.0.0.1, a local client of a dual-stack bind
    return address.is_loopback


def token_dependency(token: str) -> Any:
    """A FastAPI dependency that lets a request through only with ``token``: as
    ``Authorization: Bearer <token>`` or the server's token cookie; 401 (code
    ``server_token``) otherwise. Give it to ``include_router(..., dependencies=[...])``."""
    from .errors import WebError

    if not isinstance(token, str) or not token.strip():
        raise ValueError("token must be non-empty")  # it could never be presented
    token = token.strip()

    async def check(request: Request) -> None:
        cookie = request.cookies.get(cookie_name(request.scope)) or request.cookies.get(
            COOKIE_NAME  # the name without the port, as lovia 0.9.119 set it
        )
        if not token_matches(token, request.headers.get("authorization"), cookie):
            raise WebError(
                401,
                "server_token",
                "missing or wrong server token",
                "send 'Authorization: Bearer <token>', or open the page once at /?token=<token>",
                headers={"WWW-Authenticate": "Bearer"},
            )

    return check


def token_matches(expected: str, authorization: str | None, cookie: str | None) -> bool:
    """Whether the request carries ``expected`` (compared in constant time)."""
    offered: list[str] = []
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value:
            offered.append(value.strip())
    if cookie:
        offered.append(cookie)
    want = expected.encode()
    return any(hmac.compare_digest(want, o.encode()) for o in offered)


class LoopbackOnly:
    """ASGI middleware for a server without a token: 403 for a client that is not on this
    machine (its address is not a loopback one, whatever Host it names: an app served on
    0.0.0.0 without a token is not open to the network), 400 unless the ``Host`` header
    names a loopback address (any port), 403 for a POST/DELETE/... whose ``Origin`` is not
    loopback or that the browser marks ``Sec-Fetch-Site: same-site`` or ``cross-site``.

    A page on another site that re-points its domain at 127.0.0.1 (DNS rebinding) still
    sends its own domain as Host, so it cannot read the chats; another site's form or fetch
    carries its Origin, so it cannot start, stop or delete anything either; nor can a page
    served on another port of this host (another local program's), which browsers send as
    ``same-site``. Clients that are not browsers send no ``Sec-Fetch-Site`` and pass.

    When the app sends CORS headers (``create_app(cors_origins=...)``, or a
    ``CORSMiddleware`` of its own), a read whose ``Origin`` is neither loopback nor an origin
    the app allows by name is refused too: ``"*"`` would otherwise let every site's page read
    the chats without a token.
    """

    SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})

    def __init__(self, app: Any, origins: Callable[[], Iterable[str]] = tuple) -> None:
        self.app = app
        self.allowed = AllowedOrigins(origins)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":  # the app has no websockets; lifespan passes through
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        if client and client[0] and not _is_address(str(client[0])):
            # not a network peer: servers put the socket's address here, so a name
            # ("testclient") is a caller in this process (an ASGI test client)
            await self.app(scope, receive, send)
            return
        if client and client[0] and not is_loopback(str(client[0])):
            # a Host header is the client's to write: another machine could name 127.0.0.1
            await _refuse(
                send,
                403,
                f"this server has no token, so it answers only to this machine, not to {client[0]}",
                "start lovia web with --token (or create_app(token=...)) to serve other machines",
            )
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or ()}
        host = headers.get(b"host")
        if host is not None and not _local_name(_host_of(host.decode("latin-1"))):
            await _refuse(send, 400, "this server answers only to a loopback Host header")
            return
        origin = headers.get(b"origin")
        unsafe = scope.get("method", "GET") not in self.SAFE_METHODS
        if self.allowed(origin):  # a page of a site the app allows by name
            await self.app(scope, receive, send)
            return
        checked = unsafe or self.allowed.cors()  # CORS headers would let the page read it
        if checked and origin is not None and not _is_loopback_origin(origin.decode("latin-1")):
            await _refuse(send, 403, "requests from other sites are refused")
            return
        if unsafe and _from_another_origin(headers):
            await _refuse(
                send,
                403,
                "requests from pages of other origins (another port of this host included) "
                "are refused",
            )
            return
        await self.app(scope, receive, send)


class SameOriginWrites:
    """ASGI middleware for token mode: 403 for a POST/DELETE/... that rides on the cookie from
    a page of another origin: the browser marks it ``Sec-Fetch-Site: same-site`` or
    ``cross-site``, or its ``Origin`` names another host, or another port than the ``Host``
    it was sent to. A page on another port of this host would otherwise act with the
    cookie. Requests with an ``Authorization: Bearer`` header (scripts) are not affected: a
    page of another origin cannot add one."""

    SAFE_METHODS = LoopbackOnly.SAFE_METHODS

    def __init__(self, app: Any, origins: Callable[[], Iterable[str]] = tuple) -> None:
        self.app = app
        self.allowed = AllowedOrigins(origins)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers = {k.lower(): v for k, v in scope.get("headers") or ()}
        if (
            scope["type"] != "http"
            or scope.get("method", "GET") in self.SAFE_METHODS
            or _is_bearer(headers.get(b"authorization"))
        ):
            await self.app(scope, receive, send)
            return
        origin = headers.get(b"origin")
        if self.allowed(origin):  # a page of a site the app allows by name
            await self.app(scope, receive, send)
            return
        foreign = _from_another_origin(headers)
        if origin is not None and not foreign:
            host = headers.get(b"host", b"").decode("latin-1")
            foreign = not _same_place(origin.decode("latin-1"), host)
        if foreign:
            await _refuse(
                send,
                403,
                "requests from pages of other origins are refused",
                "use the page this server serves, or call the API with "
                "'Authorization: Bearer <token>' from a script",
            )
            return
        await self.app(scope, receive, send)


class AllowedOrigins:
    """The origins whose pages may write: named by ``origins()``, read on the first request
    (once the app's middleware is all added). Compared as browsers send them: scheme, host
    and port, without a path; ``"*"`` is not a name and allows nothing here."""

    def __init__(self, origins: Callable[[], Iterable[str]]) -> None:
        self._origins = origins
        self._names: frozenset[str] | None = None
        self._cors = False

    def _load(self) -> frozenset[str]:
        if self._names is None:
            found = [o for o in self._origins() if o.strip()]
            self._cors = bool(found)
            self._names = frozenset(_origin_key(o) for o in found if o.strip() != "*")
        return self._names

    def __call__(self, origin: bytes | None) -> bool:
        if origin is None:
            return False
        names = self._load()
        return bool(names) and _origin_key(origin.decode("latin-1")) in names

    def cors(self) -> bool:
        """Whether the app sends CORS headers to some origin (``"*"`` included)."""
        self._load()
        return self._cors


def _origin_key(origin: str) -> str:
    return origin.strip().rstrip("/").lower()


def cors_allowed_origins(app: Any, extra: Iterable[str] = ()) -> list[str]:
    """The origins ``app`` allows by name: ``extra`` (``create_app(cors_origins=...)``) and
    the ``allow_origins`` of each ``CORSMiddleware`` added to it."""
    from starlette.middleware.cors import CORSMiddleware

    names = [o for o in extra if isinstance(o, str)]
    for middleware in getattr(app, "user_middleware", ()):
        cls = getattr(middleware, "cls", None)
        if isinstance(cls, type) and issubclass(cls, CORSMiddleware):
            found = getattr(middleware, "kwargs", {}).get("allow_origins") or ()
            names.extend(o for o in found if isinstance(o, str))
    return names


def _local_name(host: str) -> bool:
    """A loopback address or ``localhost``, or a name of one label (``myhost``, ``test``):
    no public DNS name, so no page of another site is served under it."""
    if is_loopback(host):
        return True
    return bool(host) and "." not in host and ":" not in host and not _is_address(host)


@functools.lru_cache(maxsize=256)
def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    return True


def _is_bearer(authorization: bytes | None) -> bool:
    """Whether the request carries a Bearer token: a script's (a page of another origin
    cannot add one). Other schemes do not count: a browser adds the Basic credentials of a
    proxy in front by itself, to requests of any page."""
    return authorization is not None and authorization.strip()[:7].lower() == b"bearer "


def _from_another_origin(headers: Mapping[bytes, bytes]) -> bool:
    """Whether the browser says a page of another origin sent the request: ``Sec-Fetch-Site``
    is ``same-site`` (another port or subdomain) or ``cross-site``. ``same-origin``, ``none``
    (typed in the address bar) and no header at all (a script, an old browser) pass."""
    site = headers.get(b"sec-fetch-site", b"").decode("latin-1").strip().lower()
    return site in ("same-site", "cross-site")


def _same_place(origin: str, host: str) -> bool:
    """Whether ``Origin`` names the host of the ``Host`` header, and its port when both
    name one (a TLS proxy in front may drop or change the scheme's default port)."""
    theirs = urlsplit(origin.strip())
    ours = urlsplit(f"//{host.strip()}")
    try:
        their_port, our_port = theirs.port, ours.port
    except ValueError:
        return False
    if not theirs.hostname or not ours.hostname or theirs.scheme not in ("http", "https"):
        return False
    if theirs.hostname.lower() != ours.hostname.lower():
        return False
    return their_port is None or our_port is None or their_port == our_port


def _host_of(header: str) -> str:
    """The host of a ``Host`` header: ``[::1]:8000`` -> ``::1``, ``localhost:80`` ->
    ``localhost``; ``""`` when it is malformed (a bad port, an open bracket)."""
    value = header.strip().lower()
    if value.startswith("["):
        inside, bracket, rest = value[1:].partition("]")
        ok = bracket and (not rest or (rest[0] == ":" and rest[1:].isdigit()))
        return inside if ok else ""
    if value.count(":") > 1:
        return value  # a bare IPv6 address
    name, colon, port = value.partition(":")
    return name if not colon or port.isdigit() else ""


def _is_loopback_origin(origin: str) -> bool:
    parts = urlsplit(origin.strip())
    try:
        hostname = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and hostname is not None and is_loopback(hostname)


async def _refuse(send: Any, status: int, detail: str, hint: str | None = None) -> None:
    from .errors import raw_refusal

    hint = hint or "open the page at http://127.0.0.1:PORT/, or start lovia web with --token"
    await raw_refusal(send, status, "local_origin_required", detail, hint)
