"""Multimodal parts: constructors, validation, and a part list as run input."""

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


import base64

from lovia import Agent, FilePart, ImagePart, Runner, TextPart, user
from lovia.testing import ScriptedProvider, text


@check("constructors")
def _():
    url = ImagePart(url="https://example.com/a.png")
    data = ImagePart(
        data=base64.b64encode(b"\x89PNG").decode(), mime_type="image/png", detail="low"
    )
    return [
        [url.url, url.data, url.mime_type, url.detail],
        [data.data, data.mime_type, data.detail],
        TextPart("hi").text,
    ]


@check("image_from_path")
def _():
    open("shot.PNG", "wb").write(b"\x89PNG\r\n")
    p = ImagePart.from_path("shot.PNG")
    return [p.mime_type, base64.b64decode(p.data) == b"\x89PNG\r\n", p.url]


@check("image_validation")
def _():
    out = []
    for kwargs in ({}, {"url": "u", "data": "d", "mime_type": "image/png"}, {"data": "abc"}):
        try:
            ImagePart(**kwargs)
            out.append("accepted")
        except Exception as exc:
            out.append(["raised", isinstance(exc, ValueError)])
    return out


@check("file_parts")
def _():
    a = FilePart.from_bytes(b"%PDF", mime_type="application/pdf", filename="doc.pdf")
    b = FilePart.from_url("https://example.com/doc.pdf")
    c = FilePart.from_base64("cGRm", mime_type="application/pdf")
    return [[a.data, a.mime_type, a.filename], [b.url, b.data], [c.data, c.mime_type, c.filename]]


@check("part_list_input")
def _():
    provider = ScriptedProvider([text("A cat.")])
    agent = Agent(name="vision", model=provider)
    r = Runner.run_sync(
        agent, [user([TextPart("What's in this?"), ImagePart(url="https://example.com/cat.png")])]
    )
    seen = provider.calls[0][-1].content
    return [
        r.output,
        [type(p).__name__ for p in seen],
        [type(p).__name__ for p in r.entries[0].content],
    ]


@check("bare_str_in_list")
def _():
    try:
        user(["plain string"])
        return "accepted"
    except Exception as exc:
        return type(exc).__name__


print(json.dumps(RESULTS, sort_keys=True))
