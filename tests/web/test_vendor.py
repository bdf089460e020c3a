"""The vendored libraries (Markdown, sanitizer, highlighting, charts, diagrams) are exactly
the pinned npm releases."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

VENDOR = resources.files("lovia.web") / "static" / "vendor"


def test_vendored_files_match_the_manifest_checksums() -> None:
    manifest = json.loads((VENDOR / "manifest.json").read_text())
    assert set(manifest) == {"marked", "dompurify", "highlightjs", "echarts", "mermaid"}
    for name, pin in manifest.items():
        data = (VENDOR / pin["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == pin["sha256"], name
        assert pin["version"].count(".") == 2
        head = data[:400].decode()
        if "version_marker" in pin:  # a minified build names its version in its code
            assert pin["version"] in pin["version_marker"]
            assert pin["version_marker"].encode() in data
            assert "License" in head or "License" in data[-100_000:].decode()  # kept
        else:
            assert pin["version"] in head  # the library's own license header is kept
        license_text = (VENDOR / pin["license_file"]).read_text()
        assert any(
            words in license_text
            for words in ("Permission is hereby granted", "Apache License", "BSD 3-Clause")
        )
        for language, part in pin.get("languages", {}).items():
            data = (VENDOR / part["file"]).read_bytes()
            assert hashlib.sha256(data).hexdigest() == part["sha256"], language
            assert pin["version"] in data[:200].decode()  # compiled for that release


def test_every_vendored_script_is_in_the_manifest() -> None:
    manifest = json.loads((VENDOR / "manifest.json").read_text())
    named = {pin["file"] for pin in manifest.values()}
    named |= {p["file"] for pin in manifest.values() for p in pin.get("languages", {}).values()}
    present = {p.name for p in VENDOR.iterdir() if p.name.endswith(".js")}
    present |= {f"highlight/{p.name}" for p in (VENDOR / "highlight").iterdir()}
    assert present == named


def test_the_page_imports_only_the_vendored_copies() -> None:
    static = resources.files("lovia.web") / "static"
    sources = "".join(p.read_text() for p in static.iterdir() if p.name.endswith((".js", ".html")))
    assert "./vendor/marked.esm.js" in sources and "./vendor/purify.es.js" in sources
    assert "./vendor/highlight/core.js" in sources
    assert "./vendor/echarts.esm.min.js" in sources and "./vendor/mermaid.min.js" in sources
    assert "http://" not in sources and "https://" not in sources  # nothing from the network
