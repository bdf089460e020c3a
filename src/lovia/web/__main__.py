"""``python -m lovia.web [options]``: the same as ``lovia web [options]``."""

from __future__ import annotations

import sys

from ..cli import main as cli_main


def main(argv: list[str] | None = None) -> int:
    """``lovia web`` with ``argv`` (default: this process's arguments); its exit status,
    returned (``2`` for a bad flag, ``0`` after ``--help``), as 0.9.119's ``main`` did."""
    try:
        return cli_main(["web", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1


def run() -> int:
    return main()


if __name__ == "__main__":
    sys.exit(run())
