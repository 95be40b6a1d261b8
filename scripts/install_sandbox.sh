#!/usr/bin/env bash
# Install Debian's bubblewrap (bwrap), the sandbox `commlab labs check` runs each student's code in, when it
# is missing.
#
# Without bwrap the grader falls back to resource limits and a process group and says what that leaves
# unisolated; the grading tests then run in that fallback. This script installs the distribution's package
# with apt-get when it can; when it cannot (not root, no apt-get, no network), it prints the reason and exits 0.
set -u

if command -v bwrap >/dev/null 2>&1; then
    echo "install_sandbox: $(command -v bwrap) is already installed ($(bwrap --version 2>/dev/null || echo 'version unknown'))"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "install_sandbox: apt-get not found; install bubblewrap with your system's package manager" \
         "(the grader falls back to resource limits and a process group without it)"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install_sandbox: not root; run 'sudo apt-get install -y bubblewrap' to grade students in a sandbox" \
         "(the grader falls back to resource limits and a process group without it)"
    exit 0
fi

export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null 2>&1; then
    if ! apt-get update -qq || ! apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null; then
        echo "install_sandbox: 'apt-get install bubblewrap' failed; the grader will use its fallback"
        exit 0
    fi
fi
echo "install_sandbox: installed $(bwrap --version 2>/dev/null || echo bwrap)"
