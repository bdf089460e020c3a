"""The vendored Markdown and sanitizer libraries are exactly the pinned npm releases."""

from __future__ import annotations

import hashlib
import json
from importlib import resources

VENDOR = resources.files("lovia.web") / "static" / "vendor"


def test_vendored_files_match_the_manifest_checksums() -> None:
    manifest = json.loads((VENDOR / "manifest.json").read_text())
    assert set(manifest) == {"marked", "dompurify"}
    for name, pin in manifest.items():
        data = (VENDOR / pin["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == pin["sha256"], name
        assert pin["version"].count(".") == 2
        head = data[:400].decode()
        assert pin["version"] in head  # the library's own license header is kept
        license_text = (VENDOR / pin["license_file"]).read_text()
        assert "Permission is hereby granted" in license_text or "Apache License" in license_text


def test_the_page_imports_only_the_vendored_copies() -> None:
    static = resources.files("lovia.web") / "static"
    sources = "".join(p.read_text() for p in static.iterdir() if p.name.endswith((".js", ".html")))
    assert "./vendor/marked.esm.js" in sources and "./vendor/purify.es.js" in sources
    assert "http://" not in sources and "https://" not in sources  # nothing from the network
