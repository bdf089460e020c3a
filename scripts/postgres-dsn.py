"""Prints the PostgreSQL DSN ``make test`` gives the tests (an empty line: none), and says on
stderr which one and why.

``LOVIA_TEST_POSTGRES_DSN`` when set; else the DSN given as the argument when a quick probe
connects to it; under ``CI=true`` that DSN without a probe (the PostgreSQL tests then fail, not
skip, when the server is down). Without psycopg or a server, the PostgreSQL tests skip with
their reason in the closing summary.
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    default = sys.argv[1]
    given = os.environ.get("LOVIA_TEST_POSTGRES_DSN", "")
    if given:
        say(f"PostgreSQL tests use LOVIA_TEST_POSTGRES_DSN={given}")
        print(given)
        return 0
    if os.environ.get("CI", "").lower() == "true":
        say(f"PostgreSQL tests use {default} (CI: they fail if it is unreachable)")
        print(default)
        return 0
    try:
        import psycopg

        with psycopg.connect(default, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except Exception as exc:  # no driver, no server, refused: the tests skip, saying why
        reason = " ".join(str(exc).split()) or type(exc).__name__
        say(f"no PostgreSQL at {default} ({reason}); its tests skip")
        say("set LOVIA_TEST_POSTGRES_DSN to run them against another server")
        print("")
        return 0
    say(f"PostgreSQL reachable at {default}: its tests run there")
    print(default)
    return 0


def say(text: str) -> None:
    print(f"make test: {text}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
