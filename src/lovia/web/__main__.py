"""``python -m lovia.web [options]``: the same as ``lovia web [options]``."""

from __future__ import annotations

import sys

from ..cli import main as cli_main


def main(argv: list[str] | None = None) -> int:
    """``lovia web`` with ``argv`` (default: this process's arguments); its exit status."""
    return cli_main(["web", *(sys.argv[1:] if argv is None else argv)])


def run() -> int:
    return main()


if __name__ == "__main__":
    sys.exit(run())
