#!/usr/bin/env bash
# Configures (once) and builds spillway into ./build.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build
