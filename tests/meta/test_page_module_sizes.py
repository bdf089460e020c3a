"""The page's own JavaScript (issue 31) follows the rule the Python modules do: no module much
over 400 lines without a written reason, each module one idea (a panel, a renderer, the API)."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parents[2] / "src" / "lovia" / "web" / "static"
LIMIT = 440

REASONS: dict[str, str] = {}


def test_page_modules_stay_small_or_say_why() -> None:
    too_big = {}
    for path in STATIC.glob("*.js"):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > LIMIT and path.name not in REASONS:
            too_big[path.name] = lines
    assert too_big == {}, f"split these page modules, or write the reason here: {too_big}"


def test_every_page_reason_is_still_needed() -> None:
    for name in REASONS:
        path = STATIC / name
        assert path.exists(), f"{name} is gone: drop its reason"
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert lines > LIMIT, f"{name} has {lines} lines now: drop its reason"
