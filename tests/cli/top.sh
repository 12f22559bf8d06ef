#!/usr/bin/env bash
# top.sh SPILLWAY WITHOUT_CACHESTAT — `spillway top` on a real job under
# the shim: --once shows the job's pid with its rank, its disk region
# (resident/reserved, phase, advice) and its cgroup line with PSI; --pid
# keeps to one process tree; colour only on a terminal and never with
# NO_COLOR; the live view quits on q and on Ctrl-C with the terminal's
# settings and cursor restored; a fork child's inherited region is its own
# memory as far as it copied it; a disk region the job unmapped (its pages
# still in the page cache) shows as resident, by the shim's cachestat
# figure (Linux 6.5+); with cachestat refused, as before 6.5, top shows the
# mapped pages and says so.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
spillway=$1
without_cachestat=$2 # runs a command with cachestat(2) answering ENOSYS
make_scratch
spill="$SCRATCH/spill"
py=/usr/bin/python3

# The job: a 16 MiB bytearray (a disk region at a 1 MiB threshold), touched
# at random until told to stop.
write_region_job "$SCRATCH/job.py"
RANK=2 LOCAL_RANK=0 "$spillway" run -q --dir "$spill" --threshold 1MiB -- \
    "$py" "$SCRATCH/job.py" "$SCRATCH/pid" "$SCRATCH/stop" random &
runner=$!
trap 'touch "$SCRATCH/stop" "$SCRATCH/stop2"; wait; rm -rf "$SCRATCH"' EXIT
for _ in $(seq 100); do [ -s "$SCRATCH/pid" ] && break; sleep 0.1; done
[ -s "$SCRATCH/pid" ] || fail "the job did not start"
pid=$(cat "$SCRATCH/pid")
# The shim's live snapshot: a memfd the job holds (nothing in the spill directory).
has_snapshot() { ls -l "/proc/$pid/fd" 2>/dev/null | grep -q '/memfd:spillway-live (deleted)'; }
for _ in $(seq 100); do has_snapshot && break; sleep 0.1; done
has_snapshot || fail "pid $pid holds no spillway-live memfd"

# The snapshot is written once a second: the first may predate the
# sampler's verdict ("sequential", the advice the region was made with), so
# a few looks are allowed for the advice to turn random.
for _ in 1 2 3 4 5; do
    out=$("$spillway" top --once --pid "$runner"); expect_status 0 $? "top --once"
    printf '%s\n' "$out" | grep -qE "^    region 0x[0-9a-f]+ disk .* advice random" && break
done
line=$(printf '%s\n' "$out" | grep -E "^$pid +2 +python3 ") || fail "no line for pid $pid with rank 2 in: $out"
expect_contains "$line" "16.0MiB (1)" "the process's disk bytes (resident/reserved, 1 region)"
region=$(printf '%s\n' "$out" | grep -E "^    region 0x[0-9a-f]+ disk +res/reserved [0-9.]+[KMG]?i?B/16.0MiB +(dirty [0-9.]+[KMG]?i?B +)?phase ") ||
    fail "no disk region line in: $out"
expect_contains "$region" "advice random" "the disk region's advice"
printf '%s\n' "$out" | grep -qE "^cgroup /.* \(v[12]\): " || fail "no cgroup line in: $out"
expect_contains "$out" "PSI (" "PSI figures"
expect_contains "$out" "spillway top: 1 process under the shim" "--pid keeps to the job's tree"
case "$out" in *$'\033'*) fail "escape sequences in output to a pipe" ;; esac
out=$("$spillway" top --once); expect_status 0 $? "top --once, every process"
printf '%s\n' "$out" | grep -qE "^$pid +2 +python3 " || fail "top without --pid misses pid $pid: $out"

# Colour on a terminal, none with NO_COLOR.
tty_out=$(script -qec "$spillway top --once --pid $pid" /dev/null </dev/null)
expect_contains "$tty_out" $'\033[1m' "colour on a terminal"
tty_out=$(NO_COLOR=1 script -qec "$spillway top --once --pid $pid" /dev/null </dev/null)
case "$tty_out" in *$'\033'*) fail "escape sequences with NO_COLOR: $tty_out" ;; esac

# The live view: q and Ctrl-C both end it with status 0, the terminal's
# settings as they were and the cursor shown again. The key is sent once the
# first frame is on screen (a fixed sleep raced a loaded machine). The
# wrapping shell ignores SIGINT as an interactive shell would (dash, script's
# shell when SHELL is unset, otherwise dies of the Ctrl-C meant for top); top
# installs its own handler, and a top killed by SIGINT still shows as 130.
for key in q $'\003'; do
    screen="$SCRATCH/screen"; : >"$screen"
    live=$( (for _ in $(seq 150); do grep -q "spillway top:" "$screen" && break; sleep 0.1; done
             sleep 0.3; printf '%s' "$key") |
        timeout 30 script -qec "trap '' INT; stty -g; $spillway top --pid $pid; echo status=\$?; stty -g" /dev/null |
        tee "$screen")
    expect_status 0 $? "live view ($(printf '%q' "$key"))"
    expect_contains "$live" "status=0" "live view exit status ($(printf '%q' "$key"))"
    expect_contains "$live" $'\033[?25l' "cursor hidden while live"
    printf '%s' "${live#*$'\033[?25l'}" | grep -q $'\033\\[?25h' || fail "cursor not shown again after $(printf '%q' "$key")"
    expect_contains "$live" "spillway top: 1 process under the shim" "live frame"
    settings=$(printf '%s\n' "$live" | tr -d '\r' | grep -E '^[0-9a-f]+(:[0-9a-f]+){20,}$')
    [ "$(printf '%s\n' "$settings" | wc -l)" = 2 ] || fail "stty -g lines not found: $live"
    [ "$(printf '%s\n' "$settings" | sort -u | wc -l)" = 1 ] || fail "terminal settings changed: $settings"
done

touch "$SCRATCH/stop"
wait "$runner"; expect_status 0 $? "the job"
[ -z "$(ls -A "$spill")" ] || fail "the spill directory is not empty after the job: $(ls -A "$spill")"

# A fork child (a DataLoader worker): the regions it inherited are remapped
# private in it. They are its anonymous memory as far as it wrote them (4
# MiB of 64 here), shown "+cow"; the parent's pages are the parent's.
cat >"$SCRATCH/fork.py" <<'PY'
import os, sys, time
b = bytearray(64 << 20)
for i in range(0, len(b), 4096): b[i] = 1
pid = os.fork()
if pid == 0:
    for i in range(0, 4 << 20, 4096): b[i] = 2
    open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    deadline = time.time() + 60
    while not os.path.exists(sys.argv[2]) and time.time() < deadline: time.sleep(0.05)
    os._exit(0)
os.waitpid(pid, 0)
PY
"$spillway" run -q --dir "$spill" --threshold 1MiB -- "$py" "$SCRATCH/fork.py" "$SCRATCH/child" "$SCRATCH/stop2" &
forker=$!
for _ in $(seq 100); do [ -s "$SCRATCH/child" ] && break; sleep 0.1; done
child=$(cat "$SCRATCH/child" 2>/dev/null) || fail "the fork child did not start"
for _ in 1 2 3 4 5; do # its snapshot comes at its sampler's first look
    out=$("$spillway" top --once --pid "$forker"); expect_status 0 $? "top --once, the forking job"
    printf '%s\n' "$out" | grep -qE "^    region 0x[0-9a-f]+ disk\+cow " && break
done
line=$(printf '%s\n' "$out" | grep -E "^$child +- +python3 ") || fail "no line for the fork child $child in: $out"
expect_contains "$line" "4.00MiB/64.0MiB (1)" "the child's own (copied) bytes, in its anon column"
printf '%s\n' "$out" | grep -qE "^    region 0x[0-9a-f]+ disk\+cow +res/reserved 4.00MiB/64.0MiB " ||
    fail "no private-copy region line with 4 MiB copied in: $out"
touch "$SCRATCH/stop2"
wait "$forker"; expect_status 0 $? "the forking job"

# A disk region of 64 MiB written whole, then MADV_DONTNEED'd by the job
# itself (as the shim's writeback pacer and page probes do): its pages
# leave the mapping (Rss ~0) and stay in the page cache, charged to the
# cgroup. top must show them resident.
cat >"$SCRATCH/unmap.py" <<'PY'
import ctypes, os, sys, time
n = 64 << 20
b = bytearray(n)
for i in range(0, n, 4096): b[i] = 1
addr = ctypes.addressof((ctypes.c_char * n).from_buffer(b))
page = os.sysconf("SC_PAGE_SIZE")
start, end = -(-addr // page) * page, (addr + n) // page * page
libc = ctypes.CDLL(None, use_errno=True)
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
if libc.madvise(start, end - start, 4) != 0: # MADV_DONTNEED
    sys.exit("madvise failed: errno %d" % ctypes.get_errno())
rss = 0
with open("/proc/self/smaps") as f: # the region's mapping: what is left mapped
    lo = None
    for line in f:
        head = line.split()
        if "-" in head[0] and len(head) >= 5:
            a, z = (int(x, 16) for x in head[0].split("-"))
            lo = a <= addr < z
        elif lo and head[0] == "Rss:":
            rss += int(head[1]) * 1024
open(sys.argv[1] + ".tmp", "w").write("%d %d" % (os.getpid(), rss))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
deadline = time.time() + 60
while not os.path.exists(sys.argv[2]) and time.time() < deadline: time.sleep(0.05)
PY
# Whether this kernel has cachestat(2) (Linux 6.5; Debian 12's own 6.1 has not).
have_cachestat=$("$py" - <<'PY'
import ctypes, tempfile
libc = ctypes.CDLL(None, use_errno=True)
with tempfile.TemporaryFile() as f:
    rng, out = (ctypes.c_uint64 * 2)(0, 0), (ctypes.c_uint64 * 5)()
    rc = libc.syscall(451, f.fileno(), ctypes.byref(rng), ctypes.byref(out), 0)
    print("no" if rc != 0 and ctypes.get_errno() == 38 else "yes")
PY
)
# MiB of "res/reserved R/64.0MiB" in a region line.
resident_mib() {
    printf '%s\n' "$1" | sed -nE 's#^    region 0x[0-9a-f]+ disk +res/reserved ([0-9.]+)([KMG]i)?B/64\.0MiB .*#\1 \2#p' |
        awk '{ m = $2 == "Gi" ? 1024 : $2 == "Mi" ? 1 : $2 == "Ki" ? 1 / 1024 : 1 / 1048576; printf "%d\n", $1 * m }'
}
# unmapped_region measured|unmeasured [WRAPPER]: runs unmap.py under the
# shim (through WRAPPER, if given) and checks what top shows of its region.
unmapped_region() {
    local want=$1 stop="$SCRATCH/stop-$1" ready="$SCRATCH/unmapped-$1"
    shift
    "$@" "$spillway" run -q --dir "$spill" --threshold 1MiB -- "$py" "$SCRATCH/unmap.py" "$ready" "$stop" &
    local job=$!
    trap 'touch "$SCRATCH"/stop*; wait; rm -rf "$SCRATCH"' EXIT
    for _ in $(seq 150); do [ -s "$ready" ] && break; sleep 0.1; done
    [ -s "$ready" ] || fail "the unmapping job ($want) did not start"
    local upid rss res=0 out region
    read -r upid rss <"$ready"
    [ "$rss" -lt $((16 << 20)) ] || fail "the job's MADV_DONTNEED left $rss bytes mapped (the check needs them unmapped)"
    # The snapshot is rewritten once a second and the page cache can lose
    # pages to reclaim on a busy machine: several looks, and 48 of the 64
    # MiB suffice.
    for _ in $(seq 20); do
        out=$("$spillway" top --once --pid "$job"); expect_status 0 $? "top --once, the unmapping job ($want)"
        res=$(resident_mib "$out"); res=${res:-0}
        [ "$want" = unmeasured ] && printf '%s\n' "$out" | grep -qE "^    region 0x[0-9a-f]+ disk " && break
        [ "$res" -ge 48 ] && break
        sleep 0.5
    done
    region=$(printf '%s\n' "$out" | grep -E "^    region 0x[0-9a-f]+ disk +res/reserved .*/64\.0MiB ") ||
        fail "no 64 MiB disk region line ($want) in: $out"
    if [ "$want" = measured ]; then
        [ "$res" -ge 48 ] || fail "the unmapped disk region shows ${res} MiB resident (its page cache is ~64 MiB): $region"
        expect_contains "$region" " dirty " "the region's dirty bytes"
        case "$out" in *"mapped pages only"*) fail "top says mapped pages only on a kernel with cachestat: $out" ;; esac
    else
        # No figure to show: top counts what is mapped, and says so.
        [ "$res" -lt 16 ] || fail "without cachestat, ${res} MiB resident: not the mapped pages: $region"
        case "$region" in *" dirty "*) fail "dirty bytes shown without cachestat: $region" ;; esac
        expect_contains "$out" "disk resident counts mapped pages only" "the note without cachestat"
    fi
    touch "$stop"
    wait "$job"; expect_status 0 $? "the unmapping job ($want)"
}
if [ "$have_cachestat" = yes ]; then unmapped_region measured; else unmapped_region unmeasured; fi
# As on a kernel before 6.5 (Debian 12's own): cachestat refused.
unmapped_region unmeasured "$without_cachestat"
echo "top: ok"
