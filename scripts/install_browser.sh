#!/usr/bin/env bash
# Install Debian's Chromium for the browser tests (tests/browser), when it is missing.
#
# The browser tests drive /usr/bin/chromium through Playwright for Python; Playwright's own browser
# download (`playwright install`) does not work offline and is never used. This script installs the
# distribution's package with apt-get when it can; when it cannot (not root, no apt-get, no network),
# it prints the reason and exits 0, and the browser tests then skip with that reason.
set -u

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    echo "install_browser: $CHROMIUM is already installed ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_browser: apt-get not found; install Chromium with your system's package manager" \
         "so that $CHROMIUM exists (the browser tests skip without it)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install_browser: not root; run 'sudo apt-get install -y chromium' to enable the browser tests" \
         "(they skip without $CHROMIUM)"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq; then
    echo "install_browser: 'apt-get update' failed; the browser tests will skip without $CHROMIUM"
    exit 0
fi
if ! apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; then
    echo "install_browser: 'apt-get install chromium' failed; the browser tests will skip without $CHROMIUM"
    exit 0
fi
echo "install_browser: installed $("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"
