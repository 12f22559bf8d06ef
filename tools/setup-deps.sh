#!/usr/bin/env bash
# Installs everything spillway needs to build, test and demo on Debian 12.
# Idempotent: packages already present are skipped by apt.
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "setup-deps.sh: run as root (it installs Debian packages)"; exit 1; }
packages=(
  build-essential meson ninja-build pkg-config
  libmimalloc-dev libunwind-dev libtomlplusplus-dev catch2
  nlohmann-json3-dev  # the spillway tool reads JSON with it (tools/cli/json.h)
  python3-numpy python3-torch
  docker.io e2fsprogs util-linux procps
  libjemalloc2 libtcmalloc-minimal4 python3-matplotlib xz-utils
  libpython3.11-testsuite  # CPython's regression tests (tests/hardening/cpython.sh)
  python3-yaml  # the Kubernetes examples are parsed in tests/cli/k8s_examples.sh
  chromium  # spillway report's HTML page is opened headless in tests/cli/report_browser.sh
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps.sh: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
