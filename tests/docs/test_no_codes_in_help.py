"""Help a user reads, besides the docs, never cites requirement codes either (issue 17):
``lovia ... --help``, the web API's OpenAPI page, and ``help()`` on the public API."""

from __future__ import annotations

import argparse
import inspect
import json

import lovia
from lovia.cli import build_parser

from .test_no_requirement_codes import CODE


def _all_help(parser: argparse.ArgumentParser, path: str = "lovia") -> dict[str, str]:
    out = {path: parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.update(_all_help(sub, f"{path} {name}"))
    return out


def _codes(texts: dict[str, str]) -> dict[str, list[str]]:
    return {where: found for where, text in texts.items() if (found := CODE.findall(text))}


def test_cli_help_cites_no_requirement_code() -> None:
    helps = _all_help(build_parser())
    assert len(helps) > 5  # every command and subcommand
    assert _codes(helps) == {}


def test_the_web_api_description_cites_no_requirement_code() -> None:
    from lovia.demo import demo_agent
    from lovia.web import create_app

    schema = create_app({"demo": demo_agent()}).openapi()
    texts = {
        f"{method.upper()} {path}": json.dumps(op)
        for path, ops in schema["paths"].items()
        for method, op in ops.items()
    }
    assert texts
    assert _codes(texts) == {}


def test_help_on_the_public_api_cites_no_requirement_code() -> None:
    texts: dict[str, str] = {}
    for name in lovia.__all__:
        obj = getattr(lovia, name)
        texts[name] = inspect.getdoc(obj) or ""
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if not attr.startswith("_") and callable(member):
                    texts[f"{name}.{attr}"] = inspect.getdoc(member) or ""
    assert _codes(texts) == {}
