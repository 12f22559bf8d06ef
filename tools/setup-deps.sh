#!/usr/bin/env bash
# Installs the Debian 12 packages spillway needs (tools/lib/packages.sh):
# by default everything the test suites use; with --demo only what
# tools/demo.sh needs; with --build what building everything, tests
# included, needs (not what the suites run); with --bench what
# tools/demo.sh needs and the libraries of tests/bench/jobs.sh's jobs.
# Idempotent: nothing is done when all are installed.
#   bash tools/setup-deps.sh [--demo | --build | --bench] [--log FILE]
# --log FILE: apt's output is appended to FILE instead of the terminal; a
# failure names the file.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/lib/packages.sh
packages=("${DEMO_PACKAGES[@]}" "${BUILD_TEST_PACKAGES[@]}" "${TEST_PACKAGES[@]}")
log=""
while [ $# -gt 0 ]; do
    case $1 in
    --demo) packages=("${DEMO_PACKAGES[@]}") ;;
    --build) packages=("${DEMO_PACKAGES[@]}" "${BUILD_TEST_PACKAGES[@]}") ;;
    --bench) packages=("${DEMO_PACKAGES[@]}" "${BENCH_PACKAGES[@]}") ;;
    --log) log=$2; shift ;;
    *) echo "setup-deps.sh: unknown option $1 (usage: setup-deps.sh [--demo | --build | --bench] [--log FILE])"; exit 2 ;;
    esac
    shift
done
[ "$(id -u)" = 0 ] || { echo "setup-deps.sh: run as root (it installs Debian packages)"; exit 1; }
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -gt 0 ] || exit 0
export DEBIAN_FRONTEND=noninteractive
# A freshly booted machine's own apt (apt-daily, unattended-upgrades) may
# hold the lock: wait for it rather than fail; a mirror's hiccup gets two
# more tries.
apt_get() { apt-get -o DPkg::Lock::Timeout=900 "$@"; }
install_missing() {
  echo "setup-deps.sh: installing ${missing[*]}"
  local try
  for try in 1 2 3; do
    apt_get update -q && apt_get install -y -q --no-install-recommends "${missing[@]}" && return 0
    [ $try -lt 3 ] && { echo "setup-deps.sh: apt-get failed (try $try of 3); again in $((try * 15)) s"; sleep $((try * 15)); }
  done
  return 1
}
if [ -z "$log" ]; then
  install_missing
elif ! install_missing >>"$log" 2>&1; then
  echo "setup-deps.sh: installing ${missing[*]} failed; apt's output is in $log"
  exit 1
fi
