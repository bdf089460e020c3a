"""``python -m lovia.cli ...`` is the ``lovia`` command, as lovia 0.9.119's ``lovia.cli`` module
was (programs that run it with a given interpreter keep working)."""

from __future__ import annotations

from . import main

raise SystemExit(main())
