"""``html_to_markdown``: the converter web_fetch uses, on its own."""

from __future__ import annotations

import pytest

from lovia.tools import html_to_markdown


@pytest.mark.parametrize(
    ("html", "markdown"),
    [
        ("<h3>Deep <em>title</em></h3><p>a<br>b</p>", "### Deep title\n\na\nb"),
        ("<p>one<p>two</p><hr><p>three</p>", "one\n\ntwo\n\n---\n\nthree"),
        ("<ul><li>a<li>b</ul>", "- a\n- b"),
        ("<ul><li><p>para</p></li><li></li><li>x<br>y</li></ul>", "- para\n- x\n  y"),
        ("<ul><li><ul><li>toc entry</li></ul></li></ul>", "- toc entry"),
        ("<ol><li>a</li><li>b<ul><li>c</li></ul></li></ol>", "1. a\n2. b\n\n  - c"),
        ("<p>call <code>f(`x`)</code></p>", "call ``f(`x`)``"),
        ("<pre>\n  if a &lt; b:\n    go()\n</pre>", "```\n  if a < b:\n    go()\n```"),
        ("<table><tr><td>a</td><td>b|c</td></tr></table>", "| a | b\\|c |"),
        ("<p>ok<div", "ok"),
        ("keep</a></code></ul> going", "keep going"),
        ("<p>x</p><script>var a = '<p>no</p>';</script><svg><text>no</text></svg>", "x"),
    ],
)
def test_structure_survives_the_conversion(html: str, markdown: str) -> None:
    assert html_to_markdown(html) == markdown


def test_links_resolve_against_the_base_and_unusable_targets_keep_only_their_text() -> None:
    html = (
        '<head><base href="/docs/"></head><p><a href="intro">Intro [1]</a> '
        '<a href="javascript:go()">js</a> <a href="#x">jump</a> '
        '<a href="mailto:a@b.example">mail</a> <a href="/a b(1)">odd</a></p>'
    )
    assert html_to_markdown(html, base_url="https://site.example/index.html") == (
        "[Intro \\[1\\]](https://site.example/docs/intro) js jump mail "
        "[odd](<https://site.example/a b(1)>)"
    )
    # without a base a relative URL cannot be fetched, so only its text stays
    assert html_to_markdown('<a href="/x">x</a> <img src="i.png" alt="i">') == "x"


def test_an_image_inside_a_link_stays_an_image() -> None:
    html = '<a href="https://e.example/big.png"><img src="https://e.example/s.png" alt="[s]"></a>'
    assert html_to_markdown(html) == (
        "[![\\[s\\]](https://e.example/s.png)](https://e.example/big.png)"
    )


def test_nesting_deeper_than_the_writer_can_recurse_keeps_the_text() -> None:
    # a browser caps the tree depth too: deeper elements are kept, flattened
    for opening in ("<div>", "<span>", "<ul><li>", "<ol><li><p>", "<a href='/x'>"):
        markdown = html_to_markdown(opening * 20_000 + "bottom", base_url="https://e.example/")
        assert markdown.endswith("bottom") or "[bottom]" in markdown, opening
    assert html_to_markdown("<table><tr><td>" * 20_000 + "x").startswith("| |")
    assert html_to_markdown("<b>" * 50_000 + "</i>" * 50_000 + "<p>after</p>") == "after"
    assert html_to_markdown("<div>" * 500 + "<p>one<p>two") == "one\n\ntwo"


def test_a_construct_that_never_ends_is_dropped_with_what_follows_it() -> None:
    for tail in ("<!-- open comment", "<![CDATA[ x", "<!doctype", "<?xml", "</p", "<a href"):
        assert html_to_markdown(f"<p>kept</p>{tail} lost") == "kept", tail
        assert html_to_markdown("<p>kept</p>" + tail * 20_000) == "kept", tail
    assert html_to_markdown("<p>kept</p><!-- never closed <p>lost</p>") == "kept"


def test_lists_deeper_than_ten_levels_are_not_indented_further() -> None:
    # every level re-indents all it holds: 100 levels made a 1 MB page 20 MB of Markdown
    markdown = html_to_markdown("<ol>" + "<li>a<ol>" * 12 + "<li>x<br>y")
    lines = markdown.split("\n")
    assert lines[0] == "1. a" and lines[2] == "  1. a"
    assert max(len(line) - len(line.lstrip()) for line in lines) == 20
    assert lines[-2:] == [" " * 20 + "1. x", " " * 20 + "y"]
    many = html_to_markdown("<ul><li>" * 99 + "<li>x" * 1000)
    assert len(many) < 25 * 1000
