"""Where this project deliberately differs from lovia 0.9.119, program by program.

Each entry names a program in ``programs/`` and a key of its JSON summary. The compatibility
test expects ``ours`` for that key instead of what 0.9.119 prints, and, when the reference venv
is present, checks that 0.9.119 still prints ``reference`` (so a departure cannot silently
drift). ``reason`` is what ``docs/compat.md`` tells a migrating user.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_UNSET: Any = object()


@dataclass(frozen=True)
class Departure:
    reason: str
    ours: Any
    reference: Any = _UNSET

    def has_reference(self) -> bool:
        return self.reference is not _UNSET


# program name -> summary key -> departure
DEPARTURES: dict[str, dict[str, Departure]] = {}
