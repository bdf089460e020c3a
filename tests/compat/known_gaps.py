"""Checks where this project still prints something else than lovia 0.9.119 and no decision
has been taken to keep the difference (those are in ``departures.py``): open work for issue 12.

``test_programs`` skips these checks and ``test_known_gaps_still_differ`` fails once one of
them matches, so a fixed gap must be removed from this list. ``python -m tests.compat.harness
compare NAME`` shows each difference in full.
"""

from __future__ import annotations

KNOWN_GAPS: dict[str, tuple[str, ...]] = {}
