"""Access control for the HTTP API: a shared token, as a Bearer header or a cookie.

The page cannot put headers on an ``EventSource``, so ``/?token=...`` sets an HttpOnly,
SameSite=Strict cookie once and the page then works from the cookie alone. Scripts send
``Authorization: Bearer <token>``. With no token configured (loopback only) nothing is checked.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets

__all__ = [
    "COOKIE_NAME",
    "generate_token",
    "is_loopback",
    "token_matches",
]

COOKIE_NAME = "lovia_token"


def generate_token() -> str:
    """A fresh random token (URL-safe, 32 bytes of entropy)."""
    return secrets.token_urlsafe(32)


def is_loopback(host: str) -> bool:
    """True for ``127.0.0.1``, ``::1``, ``localhost`` and the rest of 127.0.0.0/8."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
