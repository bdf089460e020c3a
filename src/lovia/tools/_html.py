"""HTML to Markdown for the model: headings, paragraphs, lists, links, code, tables, images.

The document is first read into a small element tree (standard library parser, forgiving of
unclosed tags), then written out. Scripts, styles and other machinery are dropped; relative
links and images are resolved against the page's address (and its ``<base href>``); link
targets that cannot be fetched (``data:``, ``javascript:``, fragments, relative URLs with
nothing to resolve them against) are dropped, keeping their text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

__all__ = ["Document", "parse_html"]

_DROPPED = frozenset({"script", "style", "noscript", "template", "svg", "canvas", "iframe"})
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source"}
    | {"track", "wbr", "param"}
)
_BLOCKS = frozenset(
    {"address", "article", "aside", "blockquote", "body", "dd", "div", "dl", "dt", "fieldset"}
    | {"figcaption", "figure", "footer", "form", "header", "html", "main", "nav", "p"}
    | {"section", "center", "details", "summary", "hgroup", "search"}
)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
# an opening tag closes the open element of these kinds first (the parser's implied ends)
_CLOSES = {
    "li": ("li",),
    "dt": ("dt", "dd"),
    "dd": ("dt", "dd"),
    "tr": ("tr", "td", "th"),
    "td": ("td", "th"),
    "th": ("td", "th"),
    "option": ("option",),
}
_SCOPES = frozenset({"ul", "ol", "table", "dl", "select"})
_MAX_IMAGES = 1000
# deeper elements are kept as children of the element at this depth (a browser caps the
# tree too): the writer recurses once per level, and no closing tag scans further than this
_MAX_DEPTH = 100
_LIST_INDENTS = 10
_MAX_ALT = 200
_SPACES = re.compile(r"\s+")
_BLANKS = re.compile(r"[ \t]+")
_LINK_SPECIALS = re.compile(r"([\\\[\]])")
_TICKS = re.compile(r"`+")
_UNFINISHED_TAG = re.compile(r"<(?:$|[A-Za-z/!][^>]*$)")


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str] = field(default_factory=dict)
    children: list[_Node | str] = field(default_factory=list)


@dataclass
class Document:
    """What a page is made of: its title, its Markdown, the images it references."""

    title: str | None
    markdown: str
    images: list[tuple[str, str]]  # (absolute URL, alt), in document order, deduplicated


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = _Node("#root")
        self.stack = [self.root]
        self.open: dict[str, int] = {}  # how many elements of each tag are on the stack
        self.dropped = 0
        self.title: list[str] = []
        self.in_title = False
        self.head: list[_Node] = []  # <base> and <meta> in document order
        self.closing = False  # what close() flushes as text may be a cut-off tag
        self.cut_off = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.dropped:
            self.dropped += tag in _DROPPED
            return
        if tag in _DROPPED:
            self.dropped = 1
            return
        node = _Node(tag, {k: v or "" for k, v in attrs})
        if tag in ("base", "meta"):
            self.head.append(node)
            return
        if tag == "title":
            self.in_title = True
            return
        for closed in _CLOSES.get(tag, ()):
            self._close_within_scope(closed)
        if tag in _BLOCKS or tag in _HEADINGS or tag in ("ul", "ol", "pre", "table"):
            self._close_within_scope("p")
        self.stack[-1].children.append(node)
        if tag not in _VOID and len(self.stack) <= _MAX_DEPTH:
            self.stack.append(node)
            self.open[tag] = self.open.get(tag, 0) + 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.dropped or tag in _DROPPED or tag == "title":
            return
        self.handle_starttag(tag, attrs)
        if tag not in _VOID and self.stack[-1].tag == tag:
            self._pop_from(len(self.stack) - 1)

    def _pop_from(self, index: int) -> None:
        for node in self.stack[index:]:
            self.open[node.tag] -= 1
        del self.stack[index:]

    def _close_within_scope(self, tag: str) -> None:
        if not self.open.get(tag):
            return
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                self._pop_from(i)
                return
            if self.stack[i].tag in _SCOPES:
                return

    def handle_endtag(self, tag: str) -> None:
        if self.dropped:
            self.dropped -= tag in _DROPPED
            return
        if tag == "title":
            self.in_title = False
            return
        if not self.open.get(tag):
            return  # nothing to close: no scan of the whole stack
        for i in range(len(self.stack) - 1, 0, -1):
            if self.stack[i].tag == tag:
                self._pop_from(i)
                return

    def close(self) -> None:
        self.closing = True
        # What feed() left unparsed starts with a construct that never ends (a cut-off tag,
        # an unclosed comment or CDATA section): it is dropped, as the cut-off tag below
        # would be. The standard parser's own end-of-input fallback rescans to the end once
        # per '<' in it (minutes for a megabyte of "<![CDATA[" on some Python versions).
        if self.rawdata.startswith("<"):
            self.rawdata = ""
            self.cut_off = True
        super().close()

    def handle_data(self, data: str) -> None:
        if self.closing and (self.cut_off or _UNFINISHED_TAG.match(data)):
            self.cut_off = True  # the parser hands a cut-off tag over in pieces
            return
        if self.dropped:
            return
        if self.in_title:
            self.title.append(data)
        else:
            self.stack[-1].children.append(data)


def _link_text(text: str) -> str:
    return _LINK_SPECIALS.sub(r"\\\1", text)


def _destination(url: str) -> str:
    if not re.search(r"[()\s]", url):
        return url
    return "<" + url.replace("<", "%3C").replace(">", "%3E") + ">"


def _code_span(text: str) -> str:
    ticks = "`" * (max((len(run) for run in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _largest_candidate(srcset: str) -> str:
    best, best_size = "", -1.0
    for candidate in srcset.split(","):
        parts = candidate.split()
        if not parts:
            continue
        size = 1.0
        if len(parts) > 1 and parts[1][-1:] in ("w", "x"):
            try:
                size = float(parts[1][:-1])
            except ValueError:
                size = 1.0
        if size > best_size:
            best, best_size = parts[0], size
    return best


def _opens_with_list(item: _Node) -> bool:
    for child in item.children:
        if isinstance(child, str):
            if child.strip():
                return False
            continue
        return child.tag in ("ul", "ol")
    return False


def _indent(text: str, pad: str) -> str:
    """``text`` with ``pad`` before every line that is not empty."""
    if not pad:
        return text
    return "\n".join(pad + line if line else line for line in text.split("\n"))


def _plain(node: _Node | str) -> str:
    if isinstance(node, str):
        return node
    return "".join(_plain(child) for child in node.children)


class _Writer:
    def __init__(self, base: str, collect_images: bool) -> None:
        self.base = base
        self.collect = collect_images
        self.images: dict[str, str] = {}
        self.list_depth = 0

    def absolute(self, url: str) -> str:
        url = url.strip()
        if not url or url.startswith(("data:", "javascript:", "#")):
            return ""
        try:
            resolved = urljoin(self.base, url)
        except ValueError:
            return ""
        return resolved if urlsplit(resolved).scheme in ("http", "https") else ""

    def image(self, src: str, alt: str) -> str:
        url = self.absolute(src)
        if url and self.collect and len(self.images) < _MAX_IMAGES:
            self.images.setdefault(url, alt)
        return url

    # ---- blocks: each returns a list of Markdown blocks, joined by blank lines ----

    def blocks(self, children: list[_Node | str], in_cell: bool = False) -> list[str]:
        out: list[str] = []
        run: list[str] = []

        def flush() -> None:
            lines = [_BLANKS.sub(" ", line).strip() for line in "".join(run).split("\n")]
            if any(lines):
                out.append("\n".join(line for line in lines if line))
            run.clear()

        for child in children:
            block = None if isinstance(child, str) else self.block(child)
            if block is None:
                run.append(self.inline(child, link=False, cell=in_cell))
            else:
                flush()
                out.extend(block)
        flush()
        return out

    def block(self, node: _Node) -> list[str] | None:
        tag = node.tag
        if tag in _HEADINGS:
            text = _SPACES.sub(" ", self.inline_children(node)).strip()
            return [f"{'#' * _HEADINGS[tag]} {text}"] if text else []
        if tag in ("ul", "ol"):
            return self.list_block(node, tag == "ol")
        if tag == "li":  # outside a list
            return self.list_block(_Node("ul", children=[node]), False)
        if tag == "pre":
            code = _plain(node).removeprefix("\n").rstrip()
            lines = [line.rstrip() for line in code.split("\n")]
            return ["```\n" + "\n".join(lines) + "\n```"]
        if tag == "table":
            return self.table(node)
        if tag == "hr":
            return ["---"]
        if tag in _BLOCKS:
            return self.blocks(node.children)
        if tag in ("thead", "tbody", "tfoot", "tr"):
            return self.table(_Node("table", children=[node]))
        return None

    def list_block(self, node: _Node, ordered: bool) -> list[str]:
        # lists nested deeper than _LIST_INDENTS levels are not indented further: each level
        # indents every line of what it holds, so 100 levels would cost 100 passes over it
        self.list_depth += 1
        try:
            return self._list_items(node, ordered, "  " if self.list_depth <= _LIST_INDENTS else "")
        finally:
            self.list_depth -= 1

    def _list_items(self, node: _Node, ordered: bool, pad: str) -> list[str]:
        items: list[str] = []
        number = 1
        for child in node.children:
            if isinstance(child, str):
                continue
            content = self.blocks(child.children) if child.tag == "li" else self.block(child)
            if not content:
                continue
            if child.tag != "li":  # a nested list straight inside the list
                items.append("\n".join(pad + block if block else block for block in content))
                continue
            text = "\n\n".join(content)
            if _opens_with_list(child):  # no marker left alone on its own line
                items.append(_indent(text, pad))
                continue
            marker = f"{number}. " if ordered else "- "
            number += ordered
            first, newline, rest = text.partition("\n")
            items.append(marker + first + (newline + _indent(rest, pad) if newline else ""))
        return ["\n".join(items)] if items else []

    def table(self, node: _Node) -> list[str]:
        rows: list[str] = []

        def walk(n: _Node) -> None:
            for child in n.children:
                if isinstance(child, str):
                    continue
                if child.tag == "tr":
                    row(child)
                elif child.tag in ("thead", "tbody", "tfoot"):
                    walk(child)

        def row(tr: _Node) -> None:
            cells = [c for c in tr.children if isinstance(c, _Node) and c.tag in ("td", "th")]
            if not cells:
                return
            texts = [
                " ".join(" ".join(self.blocks(c.children, in_cell=True)).split()) for c in cells
            ]
            rows.append("| " + " | ".join(texts) + " |")
            if any(c.tag == "th" for c in cells):
                rows.append("|" + " --- |" * len(cells))

        walk(node)
        return ["\n".join(rows)] if rows else []

    # ---- inline ----

    def inline_children(self, node: _Node, link: bool = False, cell: bool = False) -> str:
        return "".join(self.inline(child, link=link, cell=cell) for child in node.children)

    def inline(self, node: _Node | str, *, link: bool, cell: bool) -> str:
        if isinstance(node, str):
            text = _SPACES.sub(" ", node)
            text = _link_text(text) if link else text
            return text.replace("|", "\\|") if cell else text
        tag = node.tag
        if tag == "br":
            return "\n"
        if tag == "img":
            src = node.attrs.get("src") or _largest_candidate(node.attrs.get("srcset", ""))
            alt = " ".join(node.attrs.get("alt", "").split())[:_MAX_ALT]
            url = self.image(src, alt)
            return f"![{_link_text(alt)}]({_destination(url)})" if url else ""
        if tag == "source":
            self.image(_largest_candidate(node.attrs.get("srcset", "")), "")
            return ""
        if tag == "code":
            text = " ".join(_plain(node).split())
            return _code_span(text) if text else ""
        if tag == "a":
            url = self.absolute(node.attrs.get("href", ""))
            inner = " ".join(self.inline_children(node, link=bool(url), cell=cell).split())
            if url and inner:
                return f"[{inner}]({_destination(url)})"
            return inner
        return self.inline_children(node, link=link, cell=cell)

    def head(self, nodes: list[_Node]) -> None:
        for node in nodes:
            if node.tag == "base" and node.attrs.get("href"):
                self.base = urljoin(self.base, node.attrs["href"])
            elif node.tag == "meta":
                kind = (node.attrs.get("property") or node.attrs.get("name") or "").lower()
                if kind in ("og:image", "og:image:url", "twitter:image"):
                    self.image(node.attrs.get("content", ""), "")


def parse_html(html: str, *, base_url: str = "", collect_images: bool = False) -> Document:
    """Read ``html`` (any markup, however broken) into a :class:`Document`."""
    builder = _TreeBuilder()
    try:
        builder.feed(html)
        builder.close()
    except Exception:  # the standard parser rarely gives up; keep what it read
        pass
    writer = _Writer(base_url, collect_images)
    writer.head(builder.head)
    markdown = "\n\n".join(block for block in writer.blocks(builder.root.children) if block)
    markdown = markdown.strip()
    title = " ".join("".join(builder.title).split()) or None
    return Document(title, markdown, list(writer.images.items()))
