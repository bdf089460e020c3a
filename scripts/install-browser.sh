#!/usr/bin/env bash
# Install Debian's Chromium for the browser tests (Playwright drives it; it never downloads
# a browser of its own), a CJK font so the page's Chinese renders as text, not boxes, and an
# emoji font.
# Idempotent and quiet: does nothing when /usr/bin/chromium and the fonts are there.
set -euo pipefail
need=()
if [ ! -x /usr/bin/chromium ]; then
    need+=(chromium fonts-dejavu-core)
fi
if ! (command -v fc-list >/dev/null 2>&1 && fc-list :lang=zh | grep -q .); then
    need+=(fonts-noto-cjk)
fi
if ! (command -v fc-list >/dev/null 2>&1 && fc-list :charset=1f44d | grep -q .); then
    need+=(fonts-noto-color-emoji)  # emoji in answers and extensions' buttons (👍)
fi
if [ ${#need[@]} -eq 0 ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-browser: no apt-get here; install Chromium as /usr/bin/chromium yourself" >&2
    exit 1
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
test -x /usr/bin/chromium
