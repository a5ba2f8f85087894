#!/usr/bin/env bash
# Installs Debian's Chromium when /usr/bin/chromium is missing: the dashboard's browser tests drive
# it through playwright-core, which downloads no browser. Run by .ci/run and by the test setup.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "The dashboard's browser tests need Chromium at /usr/bin/chromium; install it with your system's package manager." >&2
  exit 1
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "Installing Chromium (apt-get) for the dashboard's browser tests ..." >&2
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends chromium
