"""web_fetch against a local HTTP server: what the model gets back for HTML, JSON, text,
binary, redirects, errors, long and capped bodies; html_to_markdown; a custom reader."""

# ruff: noqa: E402
import asyncio
import json
import sys
import traceback

RESULTS: dict = {}


def check(name):
    """Record what ``fn`` returns (or which exception it raised) under ``name``."""

    def record(fn):
        try:
            value = fn()
            if asyncio.iscoroutine(value):
                value = asyncio.run(value)
            json.dumps(value)
        except Exception as exc:
            print(f"--- {name}:", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            value = {"raised": type(exc).__name__}
        RESULTS[name] = value
        return fn

    return record


import http.server
import threading

from lovia import Agent, Runner
from lovia.testing import ScriptedProvider, batch, text
from lovia.tools import HttpReader, Page, PageImage, html_to_markdown, web_fetch

HTML = """<!doctype html><html><head><title>The Guide</title>
<meta property="og:image" content="/og.png">
<style>body { color: red }</style><script>alert('x')</script></head>
<body><h1>Guide</h1><p>Read the <a href="/docs">docs</a> or <a href="#top">top</a>.</p>
<h2>Steps</h2><ul><li>one</li><li>two<ol><li>inner</li></ol></li></ul>
<p>Use <code>pip install</code> first.</p>
<pre>x = 1
y = 2</pre>
<table><tr><th>Name</th><th>Value</th></tr><tr><td>a|b</td><td>2</td></tr></table>
<img src="/img/hero.png" alt="Hero banner">
<img srcset="/s1.png 1x, /s2.png 2x" alt="">
<picture><source srcset="/p.webp 640w, /p-big.webp 1280w"><img src="/p.png" alt="Pic"></picture>
<img src="data:image/png;base64,AAAA" alt="inline">
<noscript>enable js</noscript></body></html>"""

LONG = "\n".join(f"line {i:05d} " + "x" * 40 for i in range(1000))


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def _send(self, status, ctype, body, extra=()):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        if ctype:
            self.send_header("Content-Type", ctype)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        routes = {
            "/page": (200, "text/html; charset=utf-8", HTML),
            "/data": (200, "application/json", '{\n  "a": [1, 2],\n  "b": "é"\n}'),
            "/plain": (200, "text/plain", "just text\n  indented"),
            "/bin": (200, "image/png", b"\x89PNG\r\n\x1a\n" + b"\0" * 100),
            "/octet": (200, "application/octet-stream", b"abc"),
            "/long": (200, "text/plain", LONG),
            "/missing": (
                404,
                "text/html",
                "<html><body><p>" + "nope " * 300 + "</p></body></html>",
            ),
            "/boom": (500, "text/plain", "server exploded"),
            "/weird": (200, "text/evil\nInjected: yes", "hi"),
            "/empty": (204, None, b""),
        }
        if self.path == "/redirect":
            self._send(302, "text/plain", "", [("Location", "/page")])
            return
        status, ctype, body = routes.get(self.path, (404, "text/plain", "no"))
        self._send(status, ctype, body)


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
BASE = f"http://127.0.0.1:{server.server_address[1]}"


def scrub(value):
    if isinstance(value, str):
        return value.replace(BASE, "BASE")
    if isinstance(value, list):
        return [scrub(v) for v in value]
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items()}
    return value


def fetch_via_agent(args_list, tool=None):
    tool = tool or web_fetch(HttpReader(cache_ttl=0), max_chars=2000)
    calls = [("web_fetch", args, f"c{i}") for i, args in enumerate(args_list)]
    agent = Agent(name="bot", model=ScriptedProvider([batch(*calls), text("done")]), tools=[tool])
    result = Runner.run_sync(agent, "go")
    return scrub([[e.output, e.is_error] for e in result.entries if e.type == "tool_result"])


@check("schema")
def _():
    t = web_fetch()
    from lovia.tools import FENCE_NOTE

    return [t.name, t.parameters, t.retries, t.parallel, t.description.endswith(FENCE_NOTE)]


@check("html_page")
def _():
    return fetch_via_agent([{"url": BASE + "/page"}])


@check("html_page_images")
def _():
    return fetch_via_agent([{"url": BASE + "/page", "images": True}])


@check("redirect")
def _():
    return fetch_via_agent([{"url": BASE + "/redirect"}])


@check("payloads")
def _():
    paths = ["/data", "/plain", "/bin", "/octet", "/weird", "/empty"]
    return sorted(fetch_via_agent([{"url": BASE + p} for p in paths]))


@check("errors")
def _():
    return sorted(fetch_via_agent([{"url": BASE + "/missing"}, {"url": BASE + "/boom"}]))


@check("bad_urls")
def _():
    outputs = fetch_via_agent(
        [{"url": "ftp://x/y"}, {"url": "not a url"}, {"url": BASE + "/plain", "offset": -1}]
    )
    return sorted([output.split("\n")[0], is_error] for output, is_error in outputs)


@check("truncation")
def _():
    first = fetch_via_agent([{"url": BASE + "/long"}])
    second = fetch_via_agent([{"url": BASE + "/long", "offset": 1978}])
    past = fetch_via_agent([{"url": BASE + "/long", "offset": 10**6}])
    return [first[0][0][-200:], second[0][0][:300], past]


@check("reader_page")
def _():
    async def main():
        page = await HttpReader().read(BASE + "/page", images=True)
        return {
            "url": page.url,
            "status": page.status_code,
            "media": page.media_type,
            "title": page.title,
            "images": [[i.url, i.alt] for i in page.images],
            "capped": page.size_capped,
            "next": page.next_offset,
        }

    return scrub(asyncio.run(main()))


@check("size_cap")
def _():
    async def main():
        page = await HttpReader(max_bytes=100).read(BASE + "/long")
        return [page.size_capped, len(page.text)]

    first = asyncio.run(main())
    rendered = fetch_via_agent(
        [{"url": BASE + "/long"}], web_fetch(HttpReader(max_bytes=100, cache_ttl=0))
    )
    output, is_error = rendered[0]
    head, _, rest = output.partition("\n\n")
    notice = "HTTP 200 · text/plain · download capped at "
    return [first, head.split("\n")[1].startswith(notice), rest, is_error]


@check("html_to_markdown")
def _():
    return [
        html_to_markdown(HTML, base_url="https://example.com/a/"),
        html_to_markdown("<p>rel <a href='/x'>link</a> <img src='i.png' alt='A'></p>"),
        html_to_markdown("<ul><li>a</li><li>b</li></ul><blockquote>q</blockquote>"),
        html_to_markdown("<div><p>one<p>two</div><hr><h3>T <em>x</em></h3><dl><dt>k<dd>v</dl>"),
        html_to_markdown("<p>a [b] <a href='http://e.com/x y'>t [1]</a> <code>a`b</code></p>"),
    ]


@check("custom_reader")
def _():
    class Reader:
        async def read(self, url, *, images=False):
            return Page(
                url=url,
                status_code=200,
                media_type="text/markdown",
                title="T",
                text="body " * 10,
                images=[PageImage(url="https://e.com/i.png", alt="I")] if images else [],
            )

    return fetch_via_agent(
        [{"url": "https://e.com/", "images": True}], web_fetch(Reader(), max_chars=20)
    )


print(json.dumps(RESULTS, sort_keys=True))
