"""What the HTTP providers share: the SDK client, keys from the environment, one guarded
stream per model call, and SDK errors as lovia errors."""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ..errors import ContextOverflowError, ProviderError, UserError
from ..http_config import resolve_timeout, resolve_trust_env, resolve_verify
from ..settings import ModelSettings
from ._overflow import named_window, overflow_words

__all__ = [
    "SDKClientPlan",
    "SDKProvider",
    "guarded_stream",
    "missing_key_error",
    "named_by",
    "official_host",
    "one_shot_http_client",
    "sdk_error",
    "status_error",
    "tool_choice_name",
]


def missing_key_error(variable: str, label: str, host: str | None = None) -> UserError:
    """The error of a call to the vendor's own API without a key."""
    where = f": {host} requires an API key" if host else ""
    return UserError(
        f"no API key for the {label} provider{where}",
        hint=f"set {variable} or pass api_key=... to the provider (a server of your own, "
        f"given by base_url= or {label.upper()}_BASE_URL, needs no key)",
    )


_OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}


def official_host(package: str, host: str | None) -> bool:
    """Whether ``host`` is the vendor's own API (a regional subdomain such as
    ``eu.api.openai.com`` too, a look-alike such as ``evilapi.openai.com`` not)."""
    domain = _OFFICIAL_HOSTS.get(package)
    if not host or domain is None:
        return False
    host = host.lower().rstrip(".")
    return host == domain or host.endswith("." + domain)


def status_error(
    where: str, status: int, message: str, *, code: str | None, key_variable: str
) -> ProviderError:
    """The lovia error for an HTTP error answer from ``where`` (``"openai:gpt-4.1"``)."""
    text = f"{where} answered HTTP {status}: {message}"
    named = named_by(where)
    # 413 (request too large) is an overflow whatever its words, as in 0.9.119: only a
    # smaller request can pass
    if status == 413 or (
        status in (400, 422) and (code == "context_length_exceeded" or overflow_words(message))
    ):
        return ContextOverflowError(
            text,
            hint="the prompt is larger than the model's context window; use a context policy "
            "such as Compaction(context_window=...) or a model with a larger window",
            status_code=status,
            retryable=False,
            reported_window=named_window(message),
            **named,
        )
    hint: str | None = None
    if status in (401, 403):
        hint = (
            f"check {key_variable}: the server refused the key (wrong, expired or lacking access)"
        )
    elif status == 404:
        hint = "check the model name and the base URL (it usually ends in /v1)"
    elif status == 429:
        hint = "rate limited; give the agent a RetryPolicy (Agent(retry=RetryPolicy()))"
    elif status >= 500:
        hint = "the server failed; a RetryPolicy on the agent retries such errors"
    # as RetryPolicy decides by default: timeouts, conflicts, rate limits, server failures
    passing = status in (408, 409, 429) or status >= 500
    return ProviderError(text, hint=hint, status_code=status, retryable=passing, **named)


def named_by(where: str) -> dict[str, str]:
    """``vendor`` and ``model`` of a ``ProviderError`` from ``where`` (``"openai:gpt-4.1"``),
    the fields 0.9.119's errors carried."""
    vendor, _, model = where.partition(":")
    return {"vendor": vendor, "model": model}


def function_fields(spec: Any) -> dict[str, Any]:
    """A tool spec's ``name``, ``description`` and ``parameters``, read from OpenAI's
    ``{"type": "function", "function": {...}}`` shape (what a run passes, as 0.9.119 did) or
    the flat ``{"name", "description", "parameters"}`` one."""
    inner = spec.get("function")
    fn = inner if isinstance(inner, dict) else spec
    return {
        "name": fn.get("name") or "",
        "description": fn.get("description") or "",
        "parameters": fn.get("parameters") or {"type": "object", "properties": {}},
    }


def tool_choice_name(choice: str) -> str | None:
    """The tool name when ``choice`` names one tool, ``None`` for auto/required/none."""
    return None if choice in ("auto", "required", "none") else choice


def one_shot_http_client(
    sdk: Any, timeout: float, *, trust_env: bool = False, verify: Any = None
) -> Any:
    """An HTTP client for ``sdk`` (the openai or anthropic module) that keeps no idle connection.

    A provider is often shared by runs on different event loops (``run_sync`` twice) or made
    per run from a model string and never closed; pooled idle connections would then belong
    to a dead loop or leak. One connection per model call costs a handshake, which is small
    next to a model call; pass your own ``client=`` to pool connections. Certificates are
    verified as ``lovia.http_config`` says; proxies from the environment only with
    ``trust_env``; ``verify`` is that setting read before (``None``: read it now).
    """
    base = sdk.DefaultAsyncHttpxClient.__mro__[1]
    # The SDK's own httpx flavour (httpx or its fork httpx2) provides the matching Limits.
    httpx_module = importlib.import_module(base.__module__.split(".")[0])
    limits = httpx_module.Limits(max_connections=100, max_keepalive_connections=0)
    return sdk.DefaultAsyncHttpxClient(
        timeout=timeout,
        limits=limits,
        verify=_verify() if verify is None else verify,
        trust_env=trust_env,
    )


_VERIFY: dict[tuple[str, str], Any] = {}


def _verify() -> Any:
    """``resolve_verify()``, built once per setting: loading a CA store takes milliseconds."""
    key = (os.environ.get("LOVIA_HTTP_INSECURE", ""), os.environ.get("LOVIA_HTTP_CA_BUNDLE", ""))
    found = _VERIFY.get(key)
    if found is None:
        found = _VERIFY[key] = resolve_verify()
    return found


class SDKClientPlan:
    """A new async client of the ``package`` SDK, decided at once and built on first use.

    Importing an SDK takes about a second, so a provider made from a model string (by the
    CLI, a web server, each run) imports it only when it first calls the model. The key comes
    from ``api_key`` or ``key_variable``; ``base_url`` falls back to ``url_variable``, then to
    ``default_url`` (the SDK's own); ``timeout`` and ``trust_env`` to the environment
    (``lovia.http_config``); ``default_headers`` go with every request. The client makes no
    retries of its own: the agent's RetryPolicy is the one place that decides on retries.
    Without a key (nor a token in ``token_variable``) the client holds a placeholder that
    ``KeyPolicy`` keeps off the wire.
    """

    def __init__(
        self,
        package: str,
        client_class: str,
        *,
        api_key: str | None,
        key_variable: str,
        base_url: str | None,
        url_variable: str,
        default_url: str,
        timeout: float | None,
        trust_env: bool | None = None,
        default_headers: dict[str, str] | None = None,
        token_variable: str | None = None,
    ) -> None:
        if importlib.util.find_spec(package) is None:  # pragma: no cover - the install's
            raise UserError(
                f"the {package} provider needs the {package} package",
                hint=f"pip install 'lovia[{package}]'",
            )
        self.package, self.client_class = package, client_class
        self.url = base_url or os.environ.get(url_variable) or None
        # as the SDK keeps it (a path ends in a slash), so nothing need be built to show it
        url = self.url or default_url
        parts = urlsplit(url)
        self.base_url = url + "/" if parts.path and not url.endswith("/") else url
        self.host = parts.hostname or ""
        self.seconds = resolve_timeout(timeout)
        self.trust_env = resolve_trust_env(trust_env)
        self.verify = _verify()  # a bad CA bundle is refused here, not at the first call
        key = api_key if api_key is not None else os.environ.get(key_variable)
        # Without a key the SDK still wants one; the provider leaves its header out of every
        # request (KeyPolicy), so this placeholder is never sent.
        self.api_key = key or (
            None if token_variable and os.environ.get(token_variable) else _NO_KEY
        )
        self.keyless = self.api_key == _NO_KEY
        self.headers = dict(default_headers) if default_headers else None
        self.lock = threading.Lock()  # one build, whichever threads ask first

    def build(self) -> Any:
        sdk = importlib.import_module(self.package)
        return getattr(sdk, self.client_class)(
            api_key=self.api_key,
            base_url=self.url,
            max_retries=0,
            timeout=self.seconds,
            http_client=one_shot_http_client(
                sdk, self.seconds, trust_env=self.trust_env, verify=self.verify
            ),
            default_headers=self.headers,
        )


_NO_KEY = "lovia-no-key"


class KeyPolicy:
    """Whether a provider's requests may go out, and with which credentials.

    A missing key is an error only on the vendor's own API, which refuses every request
    without one; a server of your own (``base_url`` elsewhere) is asked without any
    credential header, as keyless local servers expect. ``official_dialect`` never moves
    this: the key follows the real host.
    """

    def __init__(
        self,
        package: str,
        client: Any,
        key_variable: str,
        plan: SDKClientPlan | None,
        default_headers: dict[str, str] | None,
    ) -> None:
        """``client``: one given by the caller (``plan`` is None), else the ``plan`` of ours."""
        if plan is not None:
            self.host, keyless = plan.host, plan.keyless
        else:
            self.host = str(getattr(getattr(client, "base_url", None), "host", "") or "")
            keyless = False
        self.package = package
        self.official_host = official_host(package, self.host)
        self.problem: UserError | None = None
        self._omits = False  # requests go without a credential header
        self._options: dict[str, Any] | None = None
        if not keyless:
            return
        if self.official_host:
            self.problem = missing_key_error(key_variable, package, self.host)
        own = {k.lower() for k in default_headers or {}}
        self._omits = not own & {"authorization", "x-api-key"}

    @property
    def request_options(self) -> dict[str, Any]:
        """Keyword arguments for every request: the credential headers left out, keyless."""
        found = self._options
        if found is None:
            found = self._options = {}
            if self._omits:  # the SDK's marker: read once the SDK is in use
                omit = _omit(self.package)
                headers = {"Authorization": omit}
                if self.package == "anthropic":
                    headers["X-Api-Key"] = omit
                found["extra_headers"] = headers
        return found

    def check(self) -> None:
        """Raise the ``UserError`` a request would meet (no key for the vendor's own API)."""
        if self.problem is not None:
            raise self.problem


def _omit(package: str) -> Any:
    """The SDK's marker that removes a header from one request."""
    sdk = importlib.import_module(package)
    found = getattr(sdk, "Omit", None)
    if found is None:  # pragma: no cover - older SDKs keep it in _types only
        found = importlib.import_module(f"{package}._types").Omit
    return found()


def sdk_error(
    sdk: Any,
    exc: Exception,
    where: str,
    *,
    url_variable: str,
    on_status: Callable[[Any], ProviderError],
) -> ProviderError:
    """The lovia error for an ``sdk`` error; ``on_status`` reads the SDK's HTTP error answers."""
    if isinstance(exc, sdk.APIStatusError):
        return on_status(exc)
    if isinstance(exc, sdk.APIConnectionError):
        return ProviderError(
            f"{where}: could not reach the server: {exc}",
            hint=f"check {url_variable} (or base_url=...) and that the server is running",
            retryable=True,  # a dropped or refused connection, a timeout: worth another try
            **named_by(where),
        )
    # An error event inside the stream: the server gave up mid-answer.
    return ProviderError(
        f"{where}: the server reported an error mid-stream: {exc}", **named_by(where)
    )


async def guarded_stream(
    open_stream: Callable[[], Awaitable[Any]],
    api_error: type[Exception],
    to_error: Callable[[Exception], ProviderError],
) -> AsyncGenerator[Any, None]:
    """The SDK stream's events, its ``api_error`` re-raised as ``to_error``'s lovia error.

    The SDK stream is closed however the iteration ends; wrap this generator in
    ``contextlib.aclosing`` so that happens at once on cancellation and on an abandoned
    generator too, not when the garbage collector gets to it.
    """
    try:
        sdk_stream = await open_stream()
    except api_error as exc:
        raise to_error(exc) from exc
    try:
        async for event in sdk_stream:
            yield event
    except api_error as exc:
        raise to_error(exc) from exc
    finally:
        await sdk_stream.close()


P = TypeVar("P", bound="SDKProvider")


class SDKProvider:
    """A provider over an SDK ``client``: ``repr``, ``aclose`` and ``async with``, once."""

    model: str
    _client: Any = None  # built from ``_plan`` on first use when the provider owns it
    _plan: SDKClientPlan | None = None
    _keys: KeyPolicy

    @property
    def client(self) -> Any:
        """The SDK client: the one given, or ours, built (and its SDK imported) on first use."""
        found = self._client
        if found is None:
            plan = self._plan
            assert plan is not None
            with plan.lock:  # threads sharing the provider: the first builds, the rest wait
                found = self._client
                if found is None:
                    found = self._client = plan.build()
        return found

    @client.setter
    def client(self, value: Any) -> None:
        self._client = value

    @property
    def _owns_client(self) -> bool:
        return self._plan is not None

    def check_ready(self) -> None:
        """Raise the ``UserError`` every call would raise, without sending anything: no API
        key for the vendor's own API. A server of your own needs none."""
        self._keys.check()

    _check_ready = check_ready  # 0.9.119's name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self._client_url()!r})"

    def _client_url(self) -> str:
        plan = self._plan
        if self._client is None and plan is not None:  # not built yet: what it will use
            return plan.base_url
        return str(self.client.base_url)

    @property
    def base_url(self) -> str:
        """The URL requests go to (without a trailing slash)."""
        return self._client_url().rstrip("/")

    async def aclose(self) -> None:
        """Close the HTTP connections (only those of a client this provider created)."""
        if self._plan is not None and self._client is not None:
            await self._client.close()

    async def __aenter__(self: P) -> P:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def with_extra_body(
    settings: ModelSettings | None, extra_body: dict[str, Any], vendors: Sequence[str] = ()
) -> ModelSettings | None:
    """``settings`` under a provider's own ``extra_body``: the settings' keys win, key by key,
    and the settings' ``provider_options`` for ``vendors`` (in order) win over both."""
    own: dict[str, Any] = {}
    for vendor in vendors:
        options = settings.provider_options.get(vendor) if settings is not None else None
        if isinstance(options, dict):
            own.update(options)
    if not extra_body and not own:
        return settings
    if settings is None:
        return ModelSettings(extra_body=dict(extra_body))
    return replace(settings, extra_body={**extra_body, **settings.extra_body, **own})


def drop_removed(req: dict[str, Any]) -> None:
    """Fields the raw extras set to ``None`` leave the request instead of being sent as null."""
    extra = req.get("extra_body")
    if not isinstance(extra, dict):
        return
    for key in [k for k, v in extra.items() if v is None]:
        del extra[key]
        req.pop(key, None)
    if not extra:
        del req["extra_body"]
