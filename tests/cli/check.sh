#!/usr/bin/env bash
# check.sh SPILLWAY SOURCE_ROOT — `spillway check`: every shipped config
# passes (config/**/*.toml and the TOML inside the Kubernetes example); the
# reference config sets every key to its default; the output is itself a
# valid config; bad configs print exactly one line (the shim's) and exit 78.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
root=$2
make_scratch
# The shipped configs name their own spill dirs; judge them as written.
unset SPILLWAY_DIR SPILLWAY_THRESHOLD SPILLWAY_POLICY SPILLWAY_LOG SPILLWAY_CONFIG

check_passes() {
    local out
    out=$("$spillway" check "$1" 2>"$SCRATCH/err"); local status=$?
    [ "$status" = 0 ] || fail "$1 does not pass spillway check (status $status): $(cat "$SCRATCH/err")"
    # The effective settings are themselves a config that passes.
    printf '%s\n' "$out" >"$SCRATCH/effective.toml"
    "$spillway" check "$SCRATCH/effective.toml" >/dev/null || fail "the output of 'spillway check $1' is not a valid config"
}

shipped=$(find "$root/config" -name '*.toml' | sort)
[ -n "$shipped" ] || fail "no configs found under $root/config"
for f in $shipped; do check_passes "$f"; done

# The ConfigMap's TOML in the Kubernetes example (the block under "spillway.toml: |").
awk '/^  spillway.toml: \|/ {on=1; next} on && /^    / {print substr($0, 5); next} on && /^$/ {print ""; next} on {exit}' \
    "$root/config/examples/kubernetes-pod.yaml" >"$SCRATCH/configmap.toml"
grep -q '^policy' "$SCRATCH/configmap.toml" || fail "could not extract the TOML from kubernetes-pod.yaml"
check_passes "$SCRATCH/configmap.toml"

# The reference config is exactly the defaults, key for key.
strip() { grep -v '^#' | grep -v '^$'; }
ref=$("$spillway" check --ignore-env "$root/config/spillway.toml" | strip)
defaults=$("$spillway" check --ignore-env | strip)
[ "$ref" = "$defaults" ] || fail "config/spillway.toml differs from the defaults: $(diff <(echo "$ref") <(echo "$defaults"))"
# ... and mentions every key a [[rule]] takes.
for key in match module python policy access; do
    grep -q "^#   $key " "$root/config/spillway.toml" || fail "config/spillway.toml does not document rule key '$key'"
done

# The environment overrides single settings, as in the shim.
out=$(SPILLWAY_THRESHOLD=2MiB "$spillway" check "$root/config/spillway.toml")
expect_contains "$out" 'threshold = "2MiB"' "SPILLWAY_THRESHOLD override"
expect_contains "$out" "environment overrides applied: SPILLWAY_THRESHOLD=2MiB" "override note"
out=$(SPILLWAY_THRESHOLD=2MiB "$spillway" check --ignore-env "$root/config/spillway.toml")
expect_contains "$out" '# threshold: not given' "--ignore-env"
expect_contains "$out" '# threshold in this cgroup: ' "--ignore-env: the derived threshold, here"

# Bad configs: one line, the shim's format, exit 78.
bad() { # NAME EXPECTED-FRAGMENT TOML
    printf '%b' "$3" >"$SCRATCH/$1.toml"
    local err
    err=$("$spillway" check "$SCRATCH/$1.toml" 2>&1 >/dev/null); local status=$?
    expect_status 78 "$status" "bad config $1"
    expect_lines 1 "$err" "bad config $1"
    expect_contains "$err" "spillway: config error: $SCRATCH/$1.toml" "bad config $1"
    expect_contains "$err" "$2" "bad config $1"
    expect_contains "$err" "(fix it, or set SPILLWAY_ON_ERROR=continue to run unprotected)" "bad config $1"
}
bad syntax "TOML syntax error" 'threshold = "64MiB\n'
bad unknown-key ":2: key 'spill.dirr': unknown key" '[spill]\ndirr = "/x"\n'
bad wrong-type ":1: key 'threshold': expected a size string" 'threshold = true\n'
bad tiny-threshold "key 'threshold': must be at least 64KiB" 'threshold = "4KiB"\n'
bad bad-unit ":1: key 'threshold'" 'threshold = "64 parsecs"\n'
bad bad-policy ":1: key 'policy'" 'policy = "swap"\n'
bad relative-dir "key 'spill.dir': expected an absolute directory path" '[spill]\ndir = "spill"\n'
bad rule-without-policy "key 'rule.policy': every [[rule]] needs a policy" '[[rule]]\nmatch = "x*"\n'
bad rule-bad-access "key 'rule.access'" '[[rule]]\nmatch = "x*"\npolicy = "memory"\naccess = "sideways"\n'
bad depth ":2: key 'callsites.depth'" '[callsites]\ndepth = 0\n'
touch "$SCRATCH/plain-file"
bad unusable-dir "key 'spill.dir': cannot create" "[spill]\ndir = \"$SCRATCH/plain-file/spill\"\n"

# Exactly the line the shim prints for the same file.
printf 'threshold = "4KiB"\n' >"$SCRATCH/same.toml"
from_check=$("$spillway" check "$SCRATCH/same.toml" 2>&1 >/dev/null)
if [ -n "${3:-}" ]; then
    from_shim=$(SPILLWAY_CONFIG="$SCRATCH/same.toml" LD_PRELOAD="$3" /bin/true 2>&1); status=$?
    expect_status 78 "$status" "the shim on a bad config"
    [ "$from_check" = "$from_shim" ] || fail "check and the shim differ: '$from_check' vs '$from_shim'"
fi

# A missing file, and a usage error.
err=$("$spillway" check "$SCRATCH/missing.toml" 2>&1); expect_status 78 $? "missing config"
expect_lines 1 "$err" "missing config"
"$spillway" check a.toml b.toml 2>/dev/null; expect_status 2 $? "two configs"
# check creates nothing.
printf '[spill]\ndir = "%s/not-yet"\n' "$SCRATCH" >"$SCRATCH/later.toml"
out=$("$spillway" check "$SCRATCH/later.toml"); expect_status 0 $? "dir not created yet"
expect_contains "$out" "does not exist yet" "dir note"
[ ! -e "$SCRATCH/not-yet" ] || fail "check created the spill directory"
echo "check: ok"
