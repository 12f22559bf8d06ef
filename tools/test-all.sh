#!/usr/bin/env bash
# test-all.sh — from a fresh Debian 12 machine (as root): installs what is
# needed (the suites' own packages beside the build), builds, and runs
# every suite: the meson suites one by one (unit,
# programs, control, python, cli, bench, hardening, docs: whatever
# tests/meson.build defines, in its order), the packaging suite
# (tests/packaging/run.sh: builds the .deb and the wheel with
# tools/package.sh and tests them installed, in a venv and in a clean
# Debian 12 root) and the Docker integration suite. What only later
# suites need (the sanitizer builds, the fuzz targets, both packages and
# the Debian root) compiles niced in the background beside the first ones.
#
# One line when a suite starts and one when it ends (its time, passed,
# failed, and on failure the failing tests' names, the log to read and an
# excerpt of what the failure printed); a first line gives the machine;
# apt's, the build's and every suite's full output go to log files under
# one directory, named at the start and kept only when something failed
# (or the dependencies or the build did). Ends with one line "N passed, N failed"
# (tests and integration scenarios; ", N skipped" added when a test skipped)
# and a non-zero status if anything failed; status 2 when the spill directory
# is on RAM or lacks room (checked first), or when the dependencies or
# the build failed.
# Usage: bash tools/test-all.sh [--no-integration] [--no-packaging] [--suites "unit cli ..."]
#   --suites: only these meson suites (a developer's shortcut; CI runs all)
set -uo pipefail
cd "$(dirname "$0")/.."
integration=1 packaging=1 only=""
while [ $# -gt 0 ]; do
    case $1 in
    --no-integration) integration=0 ;;
    --no-packaging) packaging=0 ;;
    --suites) only=$2; shift ;;
    *) echo "test-all: unknown option $1 (usage: test-all.sh [--no-integration] [--no-packaging] [--suites \"unit cli\"])"; exit 2 ;;
    esac
    shift
done
all_start=$SECONDS

# The machine, in one line: what a failure on a machine nobody has seen
# depends on (the spill disk's read-ahead, swap, the load, the cgroup version).
machine_facts() {
    local spill dev disk ra swap cg fs
    spill=${SPILLWAY_TEST_TMP:-/var/tmp} # where the suites spill (tests/meson.build)
    dev=$(df --output=source "$spill" 2>/dev/null | tail -1); dev=${dev##*/}
    disk=$dev # a partition's read-ahead is its disk's
    [ -e "/sys/class/block/$dev/partition" ] && disk=$(basename "$(readlink -f "/sys/class/block/$dev/..")")
    ra=$(cat "/sys/class/block/$disk/queue/read_ahead_kb" 2>/dev/null || echo "?")
    swap=$(awk 'NR > 1 {kib += $3} END {print kib ? int(kib / 1024) " MiB" : "none"}' /proc/swaps)
    cg=v1; [ -f /sys/fs/cgroup/cgroup.controllers ] && cg=v2
    # Online discard makes every freed spill extent a synchronous discard
    # (docs/filesystems.md): slow frees and exits when the disk is busy.
    fs=$(findmnt -no FSTYPE,OPTIONS -T "$spill" 2>/dev/null | tail -n 1 | awk '{print $1 ($2 ~ /(^|,)discard(,|$)/ ? ", discard" : "")}')
    echo "test-all: machine: $(nproc) CPUs, $(awk '/MemTotal/ {print int($2 / 1048576)}' /proc/meminfo) GiB," \
         "kernel $(uname -r), cgroup $cg, $spill on $dev (${fs:-?}, read_ahead_kb $ra), swap $swap, load $(cut -d' ' -f1-3 /proc/loadavg)"
}
machine_facts

# Room to run, judged before twenty minutes of building: the suites spill
# to a disk filesystem (the shim refuses RAM ones), and programs/many_regions
# alone reserves 10,000 regions of 1 MiB with fallocate (a clean clone's
# whole run peaked 8.9-10 GB above its start, 2026-12-04). The build, the
# Docker images and the packaging suite's Debian root stay under 3 GiB.
check_room() {
    local spill=${SPILLWAY_TEST_TMP:-/var/tmp} fstype avail repo_dev spill_dev
    fstype=$(stat -f -c %T "$spill" 2>/dev/null) # the path's own, under stacked mounts
    case $fstype in
    tmpfs | ramfs)
        echo "test-all: $spill is on $fstype (RAM) and the suites spill there; set SPILLWAY_TEST_TMP to a directory on a disk filesystem"
        exit 2 ;;
    esac
    avail=$(df -BG --output=avail "$spill" 2>/dev/null | tail -1 | tr -dc 0-9)
    if [ -n "$avail" ] && [ "$avail" -lt 12 ]; then
        echo "test-all: $spill has $avail GiB free and the suites need 12 GiB there (their spill files); free some or set SPILLWAY_TEST_TMP to a disk filesystem with room"
        exit 2
    fi
    repo_dev=$(stat -c %d .); spill_dev=$(stat -c %d "$spill" 2>/dev/null)
    avail=$(df -BG --output=avail . | tail -1 | tr -dc 0-9)
    if [ "$repo_dev" != "$spill_dev" ] && [ -n "$avail" ] && [ "$avail" -lt 3 ]; then
        echo "test-all: $PWD has $avail GiB free and the build needs 3 GiB there; free some or clone the repository to a filesystem with room"
        exit 2
    fi
    return 0
}
check_room
logs=$(mktemp -d /var/tmp/spillway-test-all.XXXXXX)
echo "test-all: full output of every step in $logs/ (removed at the end if everything passed)"

# What a failure printed, so that a CI page showing only this output says
# why: each failing meson test's own output (its first and last lines), or
# the tail of a suite's log.
excerpt_meson_failures() { # LOG
    awk '/^ *[0-9]+\/[0-9]+ .* (FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS) / { on = 1; n = 0 }
         on { block[n++] = $0 }
         on && n > 1 && /^――――――――――/ && !/✀/ {
             for (i = 0; i < n; i++) if (i < 32 || i >= n - 10) print "  | " substr(block[i], 1, 240); else if (i == 32) print "  | ..."
             on = 0 }' "$1"
}
excerpt_tail() { tail -n 30 "$1" | sed 's/^/  | /'; }

# step NAME LOG COMMAND...: a line when it starts and one when it ends.
step() {
    local name=$1 log=$2 t0=$SECONDS; shift 2
    echo "test-all: $name: started"
    if "$@" >"$log" 2>&1; then
        echo "test-all: $name: done in $((SECONDS - t0)) s"
    else
        echo "test-all: $name: FAILED after $((SECONDS - t0)) s; see $log"
        return 1
    fi
}

# What the build needs first; the suites' own packages (tools/lib/packages.sh,
# TEST_PACKAGES: torch, Docker, clang, chromium...) install in the background
# while it compiles. dpkg unpacks them for minutes on a fresh machine, mostly
# waiting on the disk while the compiler keeps both cores busy: 600 MB, 640
# packages, 551 s alone in a fresh root at load 5 (the download 11-19 s of
# it); 165 s beside a clean clone's 280 s build, which it never held up
# (docs/flakes.md, run 33).
step "dependencies to build (apt)" "$logs/apt.log" bash tools/setup-deps.sh --build || exit 2
setsid bash -c 'bash tools/setup-deps.sh --log "$1/apt-suites.log" >>"$1/apt-suites.log" 2>&1
                echo $? >"$1/apt-suites.status"' _ "$logs" </dev/null &
apt_pid=$!
echo "test-all: installing the suites' own packages (apt) in the background, beside the build"
# wait_status PID FILE WHAT: until background job PID has written FILE (its
# step's exit status; 1 when the job died before it said); says how long
# the suites waited for WHAT, and succeeds when that status is 0.
wait_status() {
    local t0=$SECONDS
    while [ ! -f "$2" ] && kill -0 "$1" 2>/dev/null; do sleep 1; done
    [ $((SECONDS - t0)) -gt 0 ] && echo "test-all: waited $((SECONDS - t0)) s for $3"
    [ -f "$2" ] || echo 1 >"$2"
    [ "$(cat "$2")" = 0 ]
}
# The background apt is waited for, never interrupted: a killed dpkg leaves
# packages half-installed.
wait_apt() { wait_status "$apt_pid" "$logs/apt-suites.status" "the suites' packages (apt, in the background)"; }
step "build (meson, build/)" "$logs/build.log" bash tools/build.sh --except-sanitizers || { wait_apt; exit 2; }
if ! wait_apt; then
    why=$(grep '^E: ' "$logs/apt-suites.log" | tail -1)
    echo "test-all: installing the suites' packages failed${why:+ (${why#E: })}; see $logs/apt-suites.log, mend apt (mirror, lock, disk) and run again"
    exit 2
fi

# The suites share one Docker daemon, started by the first that needs one
# (tests/packaging/lib.sh leaves it running for the integration suite). A
# daemon this run started is stopped at its end, so the test command leaves
# the machine's processes as it found them; one running before is left.
dockerd_before=" $(pgrep -x dockerd | tr '\n' ' ') "
stop_daemons_started_here() {
    local pid i
    for pid in $(pgrep -x dockerd); do
        [[ "$dockerd_before" == *" $pid "* ]] && continue
        kill -TERM "$pid" 2>/dev/null || continue
        for ((i = 0; i < 40; i++)); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -0 "$pid" 2>/dev/null &&
            echo "test-all: the Docker daemon the suites started (pid $pid) did not stop within 20 s; stop it with kill $pid"
    done
    return 0
}

passed=0 failed=0 skipped=0 known=0
# One line per suite at its end: the suite, its time, passed, failed (and
# skipped, by name: a skip is a test that did not run, so it is shown; and
# the known defects, tests meson runs with should_fail that failed as
# expected: shown by name, so an unfixed defect stays in view).
suite_end() { # NAME SECONDS PASSED FAILED [FAILING NAMES] [LOG] [SKIPPED] [SKIPPED NAMES] [KNOWN] [KNOWN NAMES]
    local line="test-all: suite $1: $2 s, $3 passed, $4 failed"
    [ "$4" -gt 0 ] && line+="${5:+: $5}; log: $6"
    [ "${7:-0}" -gt 0 ] && line+="; ${7} skipped: $8"
    [ "${9:-0}" -gt 0 ] && line+="; ${9} known defect$([ "$9" -gt 1 ] && echo s) (failed as expected): ${10}"
    echo "$line"
    passed=$((passed + $3)); failed=$((failed + $4)); skipped=$((skipped + ${7:-0})); known=$((known + ${9:-0}))
}

# The tests of a meson log whose result matches RESULTS (an ERE of meson's
# words), by name, on one line: meson prints " 3/12 spillway:unit / NAME   FAIL ...".
test_names() { # LOG RESULTS
    grep -E "^ *[0-9]+/[0-9]+ .* ($2) " "$1" | sed -E 's/^ *[0-9]+\/[0-9]+ [^ ]+ \/ ([^ ]+) .*/\1/' |
        sort -u | tr '\n' ' ' | sed 's/ $//'
}

# The meson suites, in the order meson lists them. One test at a time
# (but in the hardening suite, below): several fill memory, mount
# filesystems or time things.
suites=$(meson test -C build --list 2>/dev/null | sed -n 's/^[^:]*:\([^ ]*\) \/ .*/\1/p' | awk '!seen[$0]++')
[ -n "$suites" ] || { echo "test-all: meson lists no test suite in build/; see $logs/build.log"; exit 2; }
if [ -n "$only" ]; then
    for s in $only; do
        grep -qx "$s" <<<"$suites" || { echo "test-all: no meson suite '$s'; the suites are: $(echo $suites)"; exit 2; }
    done
    suites=$only
fi
# Compiles the suites need only later run niced in the background beside
# the first suites, which leave a core idle much of the time (they wait on
# the disk and on the kernel's reclaim): the hardening suite's sanitizer
# builds of the unit tests and its fuzz targets, then both packages and the
# packaging suite's Debian root (tests/packaging/run.sh --build-only). The suites
# run with --no-rebuild: two ninjas must not share build/.
sanitizer_targets=""
tr ' ' '\n' <<<"$suites" | grep -qx hardening && # one per line, or --suites "a b"
    sanitizer_targets=$(ninja -C build -t query meson-test-prereq |
        awk '/^  outputs:/ {exit} /^    tests\/hardening\/unit_tests_(ubsan|tsan)$/ {print $1}')
background_pid=""
if [ -n "$sanitizer_targets" ] || [ "$packaging" = 1 ]; then
    # setsid: its own process group, so that an interrupted run stops it all.
    setsid nice -n 19 ionice -c 3 bash -c '
        logs=$1 packaging=$2; shift 2
        status=0
        if [ $# -gt 0 ]; then
            ninja -C build "$@" >"$logs/build-sanitizers.log" 2>&1 || status=$?
            # The fuzz targets (clang): the fuzz test builds what is missing.
            bash tests/hardening/fuzz.sh "$PWD" build/tests/hardening/fuzz build >>"$logs/build-sanitizers.log" 2>&1
        fi
        echo "$status" >"$logs/build-sanitizers.status"
        [ "$packaging" = 1 ] || exit 0
        status=0
        bash tests/packaging/run.sh --build-only >"$logs/packaging-build.log" 2>&1 || status=$?
        echo "$status" >"$logs/packaging-build.status"' _ "$logs" "$packaging" $sanitizer_targets </dev/null &
    background_pid=$!
    what=$( { [ -n "$sanitizer_targets" ] && echo "the sanitizer builds"; [ "$packaging" = 1 ] && echo "both packages"; } | paste -sd, - | sed 's/,/ and /')
    echo "test-all: compiling $what in the background (niced), beside the suites"
fi
stop_background() {
    [ -n "$background_pid" ] && kill -0 "$background_pid" 2>/dev/null && kill -TERM -- "-$background_pid" 2>/dev/null
    return 0
}
trap stop_background EXIT
# wait_background FILE WHAT: until the background compile has written FILE;
# its callers read the status themselves.
wait_background() { wait_status "$background_pid" "$1" "$2 (compiled in the background)" || true; }

for suite in $suites; do
    log="$logs/suite-$suite.log"
    if [ "$suite" = hardening ] && [ -n "$sanitizer_targets" ]; then
        wait_background "$logs/build-sanitizers.status" "the sanitizer builds"
        [ "$(cat "$logs/build-sanitizers.status")" = 0 ] ||
            echo "test-all: the sanitizer builds failed; their tests will fail; see $logs/build-sanitizers.log"
    fi
    echo "test-all: suite $suite: started"
    t0=$SECONDS
    # The hardening suite in two processes: its tests that leave a core idle
    # and time nothing are is_parallel (tests/hardening/meson.build) and run
    # side by side; every other one still runs alone.
    procs=1; [ "$suite" = hardening ] && procs=2
    meson test -C build --no-rebuild --suite "$suite" --num-processes "$procs" --print-errorlogs >"$log" 2>&1
    ok=$(awk '/^Ok:/{print $2}' "$log"); bad=$(awk '/^Fail:/{print $2}' "$log")
    timeouts=$(awk '/^Timeout:/{print $2}' "$log"); xpass=$(awk '/^Unexpected Pass:/{print $3}' "$log")
    bad=$(( ${bad:-0} + ${timeouts:-0} + ${xpass:-0} ))
    names=$(test_names "$log" 'FAIL|TIMEOUT|UNEXPECTEDPASS|ERROR')
    if [ -z "$ok" ]; then # meson did not get as far as its summary
        bad=$((bad + 1)); names="${names:+$names, }meson test did not run"
    fi
    skips=$(awk '/^Skipped:/{print $2}' "$log")
    skip_names=$(test_names "$log" 'SKIP')
    xfails=$(awk '/^Expected Fail:/{print $3}' "$log")
    xfail_names=$(test_names "$log" 'EXPECTEDFAIL')
    suite_end "$suite" $((SECONDS - t0)) "${ok:-0}" "$bad" "$names" "$log" "${skips:-0}" "$skip_names" "${xfails:-0}" "$xfail_names"
    [ "$bad" -gt 0 ] && { excerpt_meson_failures "$log"; [ -n "$ok" ] || excerpt_tail "$log"; }
done

if [ "$packaging" = 1 ]; then
    log="$logs/packaging.log"
    echo "test-all: suite packaging (.deb and wheel): started"
    t0=$SECONDS
    wait_background "$logs/packaging-build.status" "both packages and the Debian root"
    status=0
    { cat "$logs/packaging-build.log"; bash tests/packaging/run.sh --after-build "$(cat "$logs/packaging-build.status")"; } >"$log" 2>&1 || status=$?
    # Its closing line: "packaging: N passed, M failed (S s)"; a failed test
    # is "packaging: NAME FAILED, S s", a failed build "packaging: tools/package.sh failed".
    summary=$(grep -oE '^packaging: [0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
    pkg_ok=$(awk '{print $2}' <<<"$summary"); pkg_bad=$(awk '{print $4}' <<<"$summary")
    names=$(sed -n 's/^packaging: \([a-z_]*\) FAILED.*/\1/p' "$log" | tr '\n' ' ' | sed 's/ $//')
    grep -q '^packaging: tools/package.sh failed' "$log" && names="${names:+$names, }tools/package.sh"
    extra=0
    if [ -z "$summary" ] || { [ "$status" -ne 0 ] && [ "${pkg_bad:-0}" -eq 0 ]; }; then
        extra=1; names="${names:+$names, }the suite itself (exit status $status)"
    fi
    suite_end "packaging" $((SECONDS - t0)) "${pkg_ok:-0}" $((${pkg_bad:-0} + extra)) "$names" "$log"
    [ $((${pkg_bad:-0} + extra)) -gt 0 ] && excerpt_tail "$log"
fi

if [ "$integration" = 1 ]; then
    log="$logs/integration.log"
    echo "test-all: suite integration (Docker): started"
    t0=$SECONDS
    status=0
    bash tests/integration/run.sh "$PWD/build/shim/libspillway.so" >"$log" 2>&1 || status=$?
    # Its closing line: "spillway integration suite: N scenarios, M failed".
    summary=$(grep -oE 'integration suite: [0-9]+ scenarios, [0-9]+ failed' "$log" | tail -1)
    scen_all=$(awk '{print $3}' <<<"$summary"); scen_bad=$(awk '{print $5}' <<<"$summary")
    scen_all=${scen_all:-0}; scen_bad=${scen_bad:-0}
    names=$(grep -oE 'scenario [0-9]+: FAIL' "$log" | awk '{print $2}' | tr -d ':' | tr '\n' ' ' | sed 's/ $//')
    names=${names:+scenarios $names}
    extra=0
    if [ "$status" -ne 0 ] && [ "$scen_bad" -eq 0 ]; then # a setup error: no scenario failed, the suite did
        extra=1; names="${names:+$names, }the suite itself (exit status $status)"
    fi
    suite_end "integration" $((SECONDS - t0)) $((scen_all - scen_bad)) $((scen_bad + extra)) "$names" "$log"
    [ $((scen_bad + extra)) -gt 0 ] && excerpt_tail "$log"
fi

stop_daemons_started_here

if [ "$failed" -eq 0 ]; then
    rm -rf "$logs"
    echo "test-all: all suites in $((SECONDS - all_start)) s"
else
    echo "test-all: all suites in $((SECONDS - all_start)) s; the logs of what failed are in $logs/"
fi
total="$passed passed, $failed failed"
[ "$skipped" -gt 0 ] && total+=", $skipped skipped"
[ "$known" -gt 0 ] && total+=", $known known defect$([ "$known" -gt 1 ] && echo s) (docs/limitations.md)"
echo "$total"
[ "$failed" -eq 0 ]
