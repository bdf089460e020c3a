"""The store conformance kit: the contract the built-in stores pass, for anyone's store.

From a shell (either option alone tests that store alone; other arguments go to pytest, and
the exit status is pytest's)::

    python -m lovia.testing.conformance --session mystore:make_session \\
        --checkpointer mystore:make_checkpointer -q

As a pytest plugin, the same suites with the factories named on the command line::

    pytest -p lovia.testing.conformance --lovia-session mystore:make_session \\
        --pyargs lovia.testing.conformance._cli_suite

or inside your own suite, by subclassing ``lovia.testing.conformance.suite.SessionSuite`` /
``CheckpointerSuite`` (see that module). pytest is needed only here: ``pip install
'lovia[testing]'``. Importing this module does not import pytest.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ...errors import UserError
from ._kit import BrokenPromise, Check, Factory, Kit, NotOffered, load_factory

__all__ = [
    "BrokenPromise",
    "Check",
    "Factory",
    "Kit",
    "NotOffered",
    "main",
    "pytest_addoption",
]


def pytest_addoption(parser: Any) -> None:
    """The plugin's options (``-p lovia.testing.conformance``)."""
    group = parser.getgroup("lovia", "lovia store conformance")
    group.addoption(
        "--lovia-session",
        dest="lovia_session",
        default=None,
        metavar="MODULE:FACTORY",
        help="the session store under test: FACTORY(path) returns a new empty store",
    )
    group.addoption(
        "--lovia-checkpointer",
        dest="lovia_checkpointer",
        default=None,
        metavar="MODULE:FACTORY",
        help="the checkpointer under test: FACTORY(path) returns a new empty store",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lovia.testing.conformance",
        description="Run the lovia store contract on your session store and/or checkpointer. "
        "Arguments it does not know go to pytest; the exit status is pytest's.",
    )
    parser.add_argument("--session", metavar="MODULE:FACTORY", help="the session store")
    parser.add_argument("--checkpointer", metavar="MODULE:FACTORY", help="the checkpointer")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the suites on the named factories; pytest's exit status (2 for bad usage)."""
    parser = _parser()
    args, rest = parser.parse_known_args(sys.argv[1:] if argv is None else argv)
    if not args.session and not args.checkpointer:
        parser.print_usage(sys.stderr)
        print(
            "error: name a store: --session MODULE:FACTORY and/or --checkpointer ...",
            file=sys.stderr,
        )
        return 2
    try:
        import pytest
    except ImportError:
        print(
            "error: the conformance kit runs on pytest, which is not installed\n"
            "hint: pip install 'lovia[testing]'",
            file=sys.stderr,
        )
        return 2
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # MODULE is found where the command runs, as with python -m
    suite = str(Path(__file__).with_name("_cli_suite.py"))
    pytest_args = ["-p", "no:cacheprovider"]
    for option, spec, cls in (
        ("--lovia-session", args.session, "TestSession"),
        ("--lovia-checkpointer", args.checkpointer, "TestCheckpointer"),
    ):
        if not spec:
            continue
        try:
            load_factory(spec)
        except UserError as exc:
            print(f"error: {exc.message}", file=sys.stderr)
            if exc.hint:
                print(f"hint: {exc.hint}", file=sys.stderr)
            return 2
        pytest_args += [f"{option}={spec}", f"{suite}::{cls}"]
    # this module is the plugin: handed over as an object, since it is imported already
    return int(pytest.main([*pytest_args, *rest], plugins=[sys.modules[__name__]]))
