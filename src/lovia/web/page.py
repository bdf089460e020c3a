"""The chat page: ``/`` (the page, under a strict Content-Security-Policy), ``/static/...``
(its scripts and styles), ``/favicon.ico``, and a ``ChatUI(assets=...)`` folder at ``/ui/``.

The page names its scripts and the API by relative URLs, so it works under a path prefix
(``app.mount("/lovia", app)``, or a proxy with ``--root-path``). ``/?token=...`` trades the
token for an HttpOnly cookie (scoped to the prefix) and drops it from the address bar.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from .._version import __version__
from .auth import cookie_name, token_matches
from .errors import WebError
from .page_template import PageTemplate
from .ui import ChatUI

__all__ = ["FRAME_POLICY", "PAGE_POLICY", "mount_page"]

PAGE_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
)

FRAME_POLICY = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:; media-src data: blob:; base-uri 'none'; "
    "form-action 'none'; frame-ancestors 'self'; sandbox allow-scripts"
)
"""The policy of ``/frame``, the empty document a tool's HTML page is written into: its own
inline script and style run, nothing loads from any network, and the ``sandbox`` directive
gives it an opaque origin (no cookies, no storage, no access to the page) even when it is
opened on its own."""

# The frame's one script: it takes the HTML from the page that framed it, once, and writes
# it in place of itself (document.open keeps the frame's policy).
FRAME_SHELL = """<!doctype html><meta charset="utf-8"><script>
addEventListener("message", function (e) {
  if (e.source !== parent || !e.data || typeof e.data.html !== "string") return;
  document.open(); document.write(e.data.html); document.close();
}, { once: true });
</script>"""


def page_config(title: str, ui: ChatUI) -> dict[str, Any]:
    """What the page's scripts read of ``ChatUI``: the blank chat's copy, the wording by
    language, the default language, where a signed-out user signs in."""
    description = ui.empty_description
    return {
        "version": __version__,
        "title": title,
        "empty_title": ui.empty_title,
        "empty_description": [description]
        if isinstance(description, str)
        else list(description or ()),
        "empty_examples": list(ui.empty_examples),
        "messages": {lang: dict(strings) for lang, strings in ui.messages.items()},
        "default_lang": ui.default_lang,
        "logo": asset_url(ui.logo) if ui.logo else None,
        "login_url": ui.login_url,
    }


def asset_url(name: str) -> str:
    """Where the page finds one of ``ChatUI``'s files: a URL or a path on the app as it is,
    else a file in ``assets`` (served at ``ui/``, relative to the page)."""
    if "://" in name or name.startswith("/"):
        return name
    return "ui/" + name.lstrip("./")


def branding(ui: ChatUI) -> str:
    """``ChatUI``'s stylesheets and scripts as tags (after the bundled stylesheet, before the
    page's own script), and its favicon. Scripts still answer to the page's CSP."""
    tags = [f'<link rel="stylesheet" href="{html.escape(asset_url(s))}">' for s in ui.styles]
    tags += [
        f'<script type="module" src="{html.escape(asset_url(s))}"></script>' for s in ui.scripts
    ]
    return "\n  ".join(tags)


def config_block(config: dict[str, Any]) -> str:
    """``config`` as a JSON data block: never run (its type is not a script's, and the CSP
    allows no inline script), and with ``<``, ``>`` and ``&`` escaped so no text in it can
    close the element."""
    data = json.dumps(config, ensure_ascii=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        data = data.replace(char, escape)
    return f'<script type="application/json" id="lovia-config">{data}</script>'


class _Static(StaticFiles):
    """The page's scripts and styles, never its template (``index.html``: served only
    rendered, however the path spells it, ``//``, ``./``, ``..`` or a trailing ``/``)."""

    def lookup_path(self, path: str) -> tuple[str, Any]:
        if Path(path).name.lower() == "index.html":
            return "", None
        return super().lookup_path(path)


def _root(request: Request) -> str:
    return str(request.scope.get("root_path") or "").rstrip("/")


def mount_page(app: FastAPI, token: str | None, title: str, ui: ChatUI) -> None:
    static = resources.files("lovia.web") / "static"
    folder = Path(ui.assets).expanduser().resolve() if ui.assets is not None else None
    template = PageTemplate(Path(str(static)), folder)
    head = config_block(page_config(title, ui))
    extra = branding(ui)
    if extra:
        head = f"{head}\n  {extra}"
    icon = asset_url(ui.favicon) if ui.favicon else "static/favicon.svg"
    page_policy = PAGE_POLICY
    if ui.scripts:
        # extension scripts (the app author's code) may add <style> elements of their own, as
        # 0.9.119's do; model output still cannot: the sanitizer drops <style> and style=
        page_policy = PAGE_POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'")

    @app.get("/", include_in_schema=False)
    async def index(request: Request, token_param: str | None = Query(None, alias="token")) -> Any:
        root = _root(request)
        if token is not None and token_param is not None:
            if not token_matches(token, f"Bearer {token_param}", None):
                raise WebError(
                    401,
                    "server_token",
                    "wrong token",
                    "open the page at /?token=<token> with the token lovia web printed, or "
                    "create_app's token",
                )
            response = RedirectResponse(f"{root}/", status_code=303)
            response.set_cookie(
                cookie_name(request.scope),
                token,
                httponly=True,
                samesite="strict",
                max_age=30 * 86400,
                path=f"{root}/",
            )
            return response
        # the CSP is a second wall behind DOMPurify: no inline script can run at all
        page, policy = template.page(
            str(request.base_url),
            request.url_for,
            page_policy,
            title=title,
            favicon=icon,
            markup={"lovia_head": head},
        )
        headers = {"Cache-Control": "no-store", "Content-Security-Policy": policy}
        return HTMLResponse(page, headers=headers)

    @app.get("/frame", include_in_schema=False)
    async def frame() -> HTMLResponse:
        headers = {"Cache-Control": "no-store", "Content-Security-Policy": FRAME_POLICY}
        return HTMLResponse(FRAME_SHELL, headers=headers)

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> FileResponse:
        return FileResponse(
            str(static / "favicon.svg"),
            media_type="image/svg+xml",
            headers={"Cache-Control": "max-age=86400"},
        )

    app.mount("/static", _Static(directory=str(static)), name="static")
    if folder is not None:
        mount_assets(app, folder)


def mount_assets(app: FastAPI, folder: Path) -> None:
    """``ChatUI(assets=...)`` at ``/ui/``: its files but no page templates or dotfiles,
    revalidated (as 0.9.119 served them: an unchanged file is a 304 without a body)."""

    @app.get("/ui/{path:path}", include_in_schema=False, name="ui-assets")
    async def assets(path: str, request: Request) -> Response:
        target = (folder / path).resolve()
        hidden = any(part.startswith(".") for part in Path(path).parts)
        if (
            hidden
            or target.suffix.lower() in (".html", ".htm")
            or not target.is_relative_to(folder)
            or not target.is_file()
        ):
            raise HTTPException(404, detail="Not Found")
        headers = {"Cache-Control": "no-cache"}
        response = FileResponse(str(target), headers=headers, stat_result=target.stat())
        etag = response.headers.get("etag")
        if etag and etag in request.headers.get("if-none-match", ""):
            return Response(status_code=304, headers={**headers, "ETag": etag})
        return response
