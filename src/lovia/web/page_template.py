"""The chat page as a Jinja template: the bundled ``index.html`` (``lovia/index.html``), or
an ``index.html`` in ``ChatUI(assets=...)`` that extends it and fills its blocks (``head``,
``sidebar_header``, ``sidebar_nav``, ``sidebar_footer``, ``topbar_actions``,
``composer_actions``, ``welcome``, ``body_end``).

A template is the app author's own markup, rendered once per path prefix (``url_for`` in it
carries the prefix); no model output or request data ever reaches it. Its inline scripts (an
import map, say) are allowed by their SHA-256 hashes in the page's Content-Security-Policy,
so the policy still lets no other inline script run.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path
from typing import Any

from ..errors import UserError

__all__ = ["PageTemplate", "inline_script_hashes"]

PAGES_KEPT = 16
"""Rendered pages kept, by base URL: the ``Host`` header is the client's to write (any port
of a loopback name passes), so a cache without a bound grows with every new one."""

_INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc\s*=)([^>]*)>(.*?)</script\s*>", re.I | re.S)
_DATA_TYPE = re.compile(r"""\btype\s*=\s*["']?application/json""", re.I)


def inline_script_hashes(page: str) -> list[str]:
    """The CSP hash sources of ``page``'s inline scripts (data blocks, never run, left out)."""
    out = []
    for attrs, body in _INLINE_SCRIPT.findall(page):
        if _DATA_TYPE.search(attrs):
            continue
        digest = base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode()
        source = f"'sha256-{digest}'"
        if source not in out:
            out.append(source)
    return out


class PageTemplate:
    """The page's template: ``render(url_for, **values)`` gives its HTML."""

    def __init__(self, static: Path, assets: Path | None) -> None:
        try:
            import jinja2
        except ImportError as exc:  # pragma: no cover - jinja2 comes with the web extra
            raise UserError("the chat page needs jinja2", hint="pip install 'lovia[web]'") from exc
        own = assets is not None and (assets / "index.html").is_file()
        loaders: list[Any] = [jinja2.PrefixLoader({"lovia": jinja2.FileSystemLoader(static)})]
        if own:
            loaders.insert(0, jinja2.FileSystemLoader(str(assets)))
        self.env = jinja2.Environment(
            loader=jinja2.ChoiceLoader(loaders),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
        )
        self.name = "index.html" if own else "lovia/index.html"
        self._pages: dict[str, tuple[str, str]] = {}
        try:
            self.template = self.env.get_template(self.name)
        except jinja2.TemplateError as exc:
            raise UserError(
                f"ChatUI assets/index.html is not a valid template: {exc}",
                hint='start it with {% extends "lovia/index.html" %} and fill only blocks',
            ) from exc

    def render(self, url_for: Any, **values: Any) -> str:
        import markupsafe

        safe = {k: markupsafe.Markup(v) for k, v in values.pop("markup", {}).items()}
        return self.template.render(url_for=url_for, **values, **safe)

    def page(self, key: str, url_for: Any, policy: str, **values: Any) -> tuple[str, str]:
        """The page for one base URL ``key`` (rendered once) and its Content-Security-Policy:
        ``policy`` with the page's inline scripts' hashes added to ``script-src``."""
        if key not in self._pages:
            if len(self._pages) >= PAGES_KEPT:
                del self._pages[next(iter(self._pages))]  # the oldest
            text = self.render(url_for, **values)
            hashes = inline_script_hashes(text)
            if hashes:
                policy = policy.replace(
                    "script-src 'self'", "script-src 'self' " + " ".join(hashes)
                )
            self._pages[key] = (text, policy)
        return self._pages[key]
