"""Run options at their edges: session without id, id without session, empty input, logging."""

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


import logging
import warnings

from lovia import Agent, InMemorySession, Runner, UserError
from lovia.testing import ScriptedProvider, text


def attempt(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = fn()
        except UserError as exc:
            value = ["UserError", bool(exc.hint)]
        except Exception as exc:
            value = ["raised", type(exc).__name__]
    return [value, sorted({type(w.message).__name__ for w in caught})]


@check("session_without_id")
def _():
    return attempt(
        lambda: (
            Runner.run_sync(
                Agent(name="a", model=ScriptedProvider([text("x")])), "q", session=InMemorySession()
            ).output
        )
    )


@check("id_without_session")
def _():
    return attempt(
        lambda: (
            Runner.run_sync(
                Agent(name="a", model=ScriptedProvider([text("x")])), "q", session_id="s"
            ).output
        )
    )


@check("empty_list_input")
def _():
    p = ScriptedProvider([text("x")])
    out = attempt(lambda: Runner.run_sync(Agent(name="a", model=p), []).output)
    return [out, [[m.role, m.content] for m in p.calls[0]] if p.calls else None]


@check("max_turns_zero")
def _():
    return attempt(
        lambda: (
            Runner.run_sync(
                Agent(name="a", model=ScriptedProvider([text("x")])), "q", max_turns=0
            ).output
        )
    )


@check("model_string_without_key")
def _():
    return attempt(lambda: Runner.run_sync(Agent(name="a", model="nosuchvendor:model"), "q").output)


@check("library_logger_silent")
def _():
    logger = logging.getLogger("lovia")
    return [any(isinstance(h, logging.NullHandler) for h in logger.handlers)]


@check("enable_logging")
def _():
    from lovia import enable_logging

    enable_logging("DEBUG", color=False)
    enable_logging("DEBUG", color=False)
    logger = logging.getLogger("lovia")
    return [
        logger.level == logging.DEBUG,
        len([h for h in logger.handlers if not isinstance(h, logging.NullHandler)]),
        logger.propagate,
    ]


print(json.dumps(RESULTS, sort_keys=True))
