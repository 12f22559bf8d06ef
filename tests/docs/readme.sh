#!/usr/bin/env bash
# readme.sh SOURCE_ROOT — the README stays a user's page: at most 200 lines
# (measurements and design live in docs/), opening with the two commands a
# newcomer runs (the demo, and the tests that .ci/run runs), and every
# docs/*.md it promises exists.
set -uo pipefail
root=$1
failed=0
fail() { echo "readme: $*"; failed=1; }
readme=$root/README.md
lines=$(wc -l <"$readme")
[ "$lines" -le 200 ] || fail "README.md has $lines lines; at most 200 (move details into docs/)"
head -5 "$readme" | grep -q 'bash tools/demo.sh' || fail "README.md does not open with 'bash tools/demo.sh'"
head -5 "$readme" | grep -q 'bash tools/test-all.sh' || fail "README.md does not open with 'bash tools/test-all.sh'"
grep -q 'exec bash tools/test-all.sh' "$root/.ci/run" || fail ".ci/run no longer runs tools/test-all.sh, the README's test command"
for doc in configuration control-api cli deployment benchmarks limitations troubleshooting; do
    [ -f "$root/docs/$doc.md" ] || fail "docs/$doc.md is missing"
    grep -q "docs/$doc.md" "$readme" || fail "README.md does not link docs/$doc.md"
done
[ $failed = 0 ] && echo "readme: ok ($lines lines)"
exit $failed
