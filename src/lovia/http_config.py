"""How the model providers connect: timeout, proxies and TLS, from arguments or the environment.

=============================  =============================================  ========
``LOVIA_PROVIDER_TIMEOUT``     seconds a request may wait on the server       ``300``
``LOVIA_PROVIDER_TRUST_ENV``   honour ``HTTP(S)_PROXY`` / ``NO_PROXY``         off
``LOVIA_HTTP_CA_BUNDLE``       a PEM file of CA certificates to trust         (none)
``LOVIA_HTTP_INSECURE``        do not verify certificates at all              off
=============================  =============================================  ========

A provider's own ``timeout=`` / ``trust_env=`` arguments win over the environment. Proxies
are off unless asked for, so a proxy set for other programs never reroutes model traffic.
Certificates are checked against, in order: nothing (``LOVIA_HTTP_INSECURE``), the CA bundle,
the operating system's store when the ``truststore`` package is installed, ``certifi``'s.
"""

from __future__ import annotations

import logging
import os
import ssl
from typing import Literal

from .errors import UserError

__all__ = [
    "DEFAULT_TIMEOUT",
    "CABundleNotFound",
    "resolve_timeout",
    "resolve_trust_env",
    "resolve_verify",
]

DEFAULT_TIMEOUT = 300.0
"""Seconds a provider request may wait on the server when nothing else is set."""

_TRUE = frozenset({"1", "true", "yes", "on"})
_log = logging.getLogger(__name__)


class CABundleNotFound(UserError, FileNotFoundError):
    """``LOVIA_HTTP_CA_BUNDLE`` names a file that does not exist (also a ``FileNotFoundError``)."""


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in _TRUE


def resolve_timeout(timeout: float | None) -> float:
    """``timeout`` if given, else ``LOVIA_PROVIDER_TIMEOUT``, else ``DEFAULT_TIMEOUT``.

    A variable that is not a positive number is ignored (with a warning in the log).
    """
    if timeout is not None:
        return float(timeout)
    raw = os.environ.get("LOVIA_PROVIDER_TIMEOUT", "").strip()
    if not raw:
        return DEFAULT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if value > 0 and value != float("inf"):
        return value
    _log.warning(
        "LOVIA_PROVIDER_TIMEOUT=%r is not a positive number of seconds; using %s",
        raw,
        DEFAULT_TIMEOUT,
    )
    return DEFAULT_TIMEOUT


def resolve_trust_env(trust_env: bool | None) -> bool:
    """``trust_env`` if given, else whether ``LOVIA_PROVIDER_TRUST_ENV`` is on (1/true/yes/on)."""
    if trust_env is not None:
        return bool(trust_env)
    return _flag("LOVIA_PROVIDER_TRUST_ENV")


def resolve_verify() -> ssl.SSLContext | Literal[False]:
    """The TLS verification for outbound requests: ``False`` (off) or the context to verify with."""
    if _flag("LOVIA_HTTP_INSECURE"):
        return False
    bundle = os.environ.get("LOVIA_HTTP_CA_BUNDLE", "").strip()
    if bundle:
        if not os.path.isfile(bundle):
            raise CABundleNotFound(
                f"LOVIA_HTTP_CA_BUNDLE names {bundle!r}, which is not a file",
                hint="point it at a PEM file of CA certificates, or unset it",
            )
        return ssl.create_default_context(cafile=bundle)
    try:
        import truststore
    except ImportError:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    context: ssl.SSLContext = truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    return context
