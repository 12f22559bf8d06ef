#!/usr/bin/env bash
# startup_modes.sh [-n ROUNDS] [-c COMMAND] NEW_LIB NEW_TOOL OLD_LIB OLD_TOOL — process start-up
# in every mode of giving settings, two builds of the shim against bare
# mimalloc and no preload, interleaved in one run per mode (startup_pairs:
# every round runs the four once, the order rotating).
#
# Modes: no setting; the variables (SPILLWAY_DIR, _THRESHOLD, _POLICY, _LOG);
# a config file (SPILLWAY_CONFIG, seen before: warmed up); under `spillway
# run` (each build's own tool prepares the environment its processes get:
# the marker of settings_check.h differs between builds).
#
# Copy the two libraries (each with its libspillway_engine.so) into
# directories whose paths have the same length: where a library sits
# changes the page faults a process takes to load it. A measurement, never
# a verdict: prints figures; the exit status says whether it ran.
set -euo pipefail
rounds=200 cmd=/bin/true
while getopts n:c: o; do
    case $o in n) rounds=$OPTARG ;; c) cmd=$OPTARG ;; *) exit 2 ;; esac
done
shift $((OPTIND - 1))
[ $# -eq 4 ] || { sed -n '2,3p' "$0" >&2; exit 2; }
new=$1 new_tool=$2 old=$3 old_tool=$4
here=$(cd "$(dirname "$0")" && pwd)
pairs=${STARTUP_PAIRS:-$here/../../build/tests/bench/startup_pairs}
mimalloc=/usr/lib/x86_64-linux-gnu/libmimalloc.so.2
[ -x "$pairs" ] || { echo "startup_modes: no $pairs (ninja -C build tests/bench/startup_pairs)" >&2; exit 2; }
work=$(mktemp -d /var/tmp/spillway-startup-modes.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -m 0700 "$work/spill"
printf 'threshold = "64MiB"\npolicy = "auto"\n[spill]\ndir = "%s"\n' "$work/spill" >"$work/job.toml"
# Under `spillway run` with a config that names its stats file, the tool
# hands its processes the user's config itself (no temporary copy): the
# environment it gives stays valid after it exits. One file for every
# process, appended to, as `spillway run`'s default temporary stats.jsonl:
# a `%p` file per process adds a file's creation to every process, which on
# one VM's ext4 under /var/tmp cost 230 us (1.5x bare mimalloc in all).
# Measure that separately when a job names one.
printf '[spill]\ndir = "%s"\n[stats]\nfile = "%s"\n' "$work/spill" "$work/stats.jsonl" >"$work/run.toml"
run_env() { # TOOL LIB: the SPILLWAY_* variables `spillway run` gives its command, as -E K options
    SPILLWAY_LIBRARY=$2 "$1" run -q -c "$work/run.toml" -- env | grep '^SPILLWAY_' | sed "s/^/-E $3 /"
}
echo "# $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) cores, $rounds rounds of $cmd"
for mode in none variables config run; do
    envs=()
    case $mode in
    variables) envs=(-e "SPILLWAY_DIR=$work/spill" -e SPILLWAY_THRESHOLD=64MiB -e SPILLWAY_POLICY=auto -e SPILLWAY_LOG=warn) ;;
    config) envs=(-e "SPILLWAY_CONFIG=$work/job.toml") ;;
    run) read -ra envs <<<"$(run_env "$new_tool" "$new" 1 | tr '\n' ' ') $(run_env "$old_tool" "$old" 2 | tr '\n' ' ')" ;;
    esac
    echo "## mode: $mode"
    "$pairs" -n "$rounds" -w 20 "${envs[@]}" -L 1 new -L 2 old -L 3 mimalloc -L 4 none \
        "$new" "$old" "$mimalloc" "" -- $cmd | grep '^#'
    echo "# load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
done
