"""The package is versioned as lovia 0.9.119's successor, so users' pins accept it."""

from __future__ import annotations

import importlib.metadata
import pathlib
import re

import lovia

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _parts(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def test_version_follows_0_9_119_and_stays_in_its_minor_series() -> None:
    text = (ROOT / "pyproject.toml").read_text()
    found = re.search(r'^version = "([0-9.]+)"$', text, re.M)
    assert found is not None
    declared = found.group(1)
    assert lovia.__version__ == declared
    assert _parts(declared) > (0, 9, 119)  # lovia>=0.9.119 accepts it
    assert _parts(declared)[:2] == (0, 9)  # and so does lovia~=0.9.119


def test_installed_metadata_matches_the_source() -> None:
    assert importlib.metadata.version("lovia") == lovia.__version__
