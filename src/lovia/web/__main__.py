"""``python -m lovia.web [options]``: the same as ``lovia web [options]``."""

from __future__ import annotations

import sys

from ..cli import main as cli_main


def main(argv: list[str] | None = None) -> int:
    """``lovia web`` with ``argv`` (default: this process's arguments); its exit status.
    A refused value is returned (``2``), as 0.9.119's ``main`` returned it; ``--help`` and
    ``--version`` end with ``SystemExit(0)``, as there."""
    try:
        return cli_main(["web", *(sys.argv[1:] if argv is None else argv)])
    except SystemExit as exc:
        if not exc.code:
            raise
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1


def run() -> int:
    return main()


if __name__ == "__main__":
    sys.exit(run())
