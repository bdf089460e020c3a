"""``python -m lovia.web [options]``: the same as ``lovia web [options]``."""

from __future__ import annotations

import sys

from ..cli import main


def run() -> int:
    return main(["web", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(run())
