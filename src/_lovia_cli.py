"""The ``lovia`` command's entry point, outside the ``lovia`` package on purpose.

``lovia.cli.main`` turns a Ctrl-C into exit status 130, but only once it runs: importing it
first imports ``lovia`` itself (pydantic, the providers...), which takes a noticeable moment,
and a Ctrl-C then would print a ``KeyboardInterrupt`` traceback. This module imports nothing
at load time, so the console script can catch that one too.
"""

from __future__ import annotations

EXIT_INTERRUPTED = 130  # as lovia.cli.EXIT_INTERRUPTED: 128 + SIGINT


def main() -> int:
    try:
        from lovia.cli import main as lovia_main
    except KeyboardInterrupt:  # Ctrl-C while lovia was still loading
        return EXIT_INTERRUPTED
    return lovia_main()
