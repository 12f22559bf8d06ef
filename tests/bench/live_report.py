"""live_report.py — the markdown report of tests/bench/live_phases.sh from its records.

Usage: live_report.py RECORDS
RECORDS: META (free text), CONF total= limit=, FLOOR n= ..., RUN n= variant= ...,
PHASE n= variant= phase= s= cpu_s= runq_s= ..., STATS n= ... (the shim's exit line).
Runs come in groups A B B A (unconstrained, shim, shim, unconstrained), or
with a baseline shim A B C C B A: each shim (and baseline) run is compared
with the unconstrained run of its half (the runs between two floors).

The floor: with a limit of LIMIT, at least TOTAL - LIMIT bytes must be
written to the disk (they cannot all stay in memory) and the same bytes read
back (only what stayed cached need not be). Disk time = those bytes over the
sequential write and read bandwidths measured in the same run (median of the
floors). Two forms:
  overlapped: each phase takes the longer of its disk time and the
              unconstrained run's CPU time for it (I/O fully overlapped with
              compute);
  serial:     the unconstrained CPU time plus both disk times (no overlap).
The unconstrained compute is its job thread's CPU time (schedstat), the least
over its runs (load only adds to it: cache and memory-bandwidth contention),
what the job would take on an idle machine; its wall time here is beside.
"""
import statistics
import sys

from records import fields

rec_meta, floors, runs, phases, stats = [], [], {}, {}, {}
conf = {}




for line in open(sys.argv[1]):
    if line.startswith("META "):
        rec_meta.append(line[5:].strip())
    elif line.startswith("CONF "):
        conf = {k: int(v) for k, v in fields(line).items()}
    elif line.startswith("FLOOR "):
        floors.append(fields(line))
    elif line.startswith("RUN "):
        f = fields(line)
        runs[int(f["n"])] = f
    elif line.startswith("PHASE "):
        f = fields(line)
        phases.setdefault(int(f["n"]), {})[f["phase"]] = f
    elif line.startswith("STATS "):
        stats[int(line.split()[1].split("=")[1])] = line.split(None, 2)[2].strip()

PH = ["write", "read"]
MiB = 1 << 20


def num(d, k):
    try:
        return float(d[k])
    except (KeyError, ValueError):
        return float("nan")


def med(xs):
    xs = [x for x in xs if x == x and x > 0]
    return statistics.median(xs) if xs else float("nan")


for m in rec_meta:
    print(f"- {m}")
print()
print("Floor of the spill filesystem's device (O_DIRECT, 1 GiB written fresh each time, 8 MiB requests):")
print()
print("| floor | sequential write | sequential read | 4 KiB random read, median |")
print("|---|---|---|---|")
for f in floors:
    print(f"| {f['n']} | {f['seq_write_MBps']} MB/s | {f['seq_read_MBps']} MB/s | {f['lat_med_us']} us |")
wbw = med([num(f, "seq_write_MBps") for f in floors]) * 1e6
rbw = med([num(f, "seq_read_MBps") for f in floors]) * 1e6
print()

print("Per run and phase: wall s = job CPU + run-queue wait (runnable, no CPU: the machine's other load) + the rest")
print("(asleep: I/O, page locks, reclaim); shim threads' CPU beside; machine busy = all CPUs' non-idle share over")
print("the phase; device MiB from /sys/block/loopN/stat.")
print()
print("| run | variant | phase | wall s | job CPU s | run-queue s | rest s | shim threads CPU s | machine busy | load (1 min) | majflt | minflt | device read MiB | device write MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for n in sorted(runs):
    r = runs[n]
    for p in PH:
        f = phases.get(n, {}).get(p)
        if not f:
            print(f"| {n} | {r['variant']} | {p} | - (status {r['status']}) | | | | | | | | | | |")
            continue
        s, c, q = num(f, "s"), num(f, "cpu_s"), num(f, "runq_s")
        print(f"| {n} | {r['variant']} | {p} | {s:.2f} | {c:.2f} | {q:.2f} | {s - c - q:.2f} | "
              f"{num(f, 'shim_cpu_s'):.2f} | {num(f, 'machine_busy') * 100:.0f}% | {f.get('load', '-')} | "
              f"{f['majflt']} | {f['minflt']} | {num(f, 'dev_read_mib'):.0f} | {num(f, 'dev_write_mib'):.0f} |")
print()

# halves: the runs between two floors, one unconstrained run each
order = sorted(runs)
group = 3 if any(r["variant"] == "baseline" for r in runs.values()) else 2
pairs = []
for i in range(0, len(order) - group + 1, group):
    half = [runs[n] for n in order[i:i + group]]
    u = [r for r in half if r["variant"] == "unconstrained"][0]
    for r in half:
        if r is not u:
            pairs.append((int(u["n"]), int(r["n"])))
print("Each shim run against the unconstrained run of its half (x = shim / unconstrained):")
print()
print("| runs | shim | whole: unconstrained s | shim s | x | write x | read x | x, run-queue wait removed on both sides |")
print("|---|---|---|---|---|---|---|---|")
ratios = []
for u, s in pairs:
    pu, ps = phases.get(u, {}), phases.get(s, {})
    if not all(p in pu and p in ps for p in PH):
        print(f"| {u},{s} | {runs[s]['variant']} | - | - | - | - | - | - |")
        continue
    wu = sum(num(pu[p], "s") for p in PH)
    ws = sum(num(ps[p], "s") for p in PH)
    nq_u = sum(num(pu[p], "s") - num(pu[p], "runq_s") for p in PH)
    nq_s = sum(num(ps[p], "s") - num(ps[p], "runq_s") for p in PH)
    px = [num(ps[p], "s") / num(pu[p], "s") for p in PH]
    ratios.append(ws / wu)
    print(f"| {u},{s} | {runs[s]['variant']} | {wu:.2f} | {ws:.2f} | {ws / wu:.2f}x | {px[0]:.2f}x | {px[1]:.2f}x | {nq_s / nq_u:.2f}x |")
print()

total, limit = conf.get("total", 0), conf.get("limit", 0)
must = max(total - limit, 0)
ucpu = {p: min([num(phases[n][p], "cpu_s") for n in runs if runs[n]["variant"] == "unconstrained"
                and p in phases.get(n, {})] or [float("nan")]) for p in PH}
uwall = {p: med([num(phases[n][p], "s") for n in runs if runs[n]["variant"] == "unconstrained"
                 and p in phases.get(n, {})]) for p in PH}
wio, rio = must / wbw, must / rbw
over = max(ucpu["write"], wio) + max(ucpu["read"], rio)
serial = ucpu["write"] + ucpu["read"] + wio + rio
ucpu_t = ucpu["write"] + ucpu["read"]
uwall_t = uwall["write"] + uwall["read"]
print(f"Floor: {must / MiB:.0f} MiB must be written and {must / MiB:.0f} MiB read back ({total / MiB:.0f} MiB live, "
      f"{limit / MiB:.0f} MiB limit); at the median floor ({wbw / 1e6:.0f} MB/s write, {rbw / 1e6:.0f} MB/s read) "
      f"that is {wio:.2f} s + {rio:.2f} s of disk. Unconstrained compute (job CPU, least of its runs: load only adds to it): write {ucpu['write']:.2f} s, "
      f"read {ucpu['read']:.2f} s ({ucpu_t:.2f} s; its wall time here {uwall_t:.2f} s).")
print()
print("| floor | s | x unconstrained compute | x unconstrained wall (this load) |")
print("|---|---|---|---|")
print(f"| overlapped: max(compute, disk) per phase | {over:.2f} | {over / ucpu_t:.2f}x | {over / uwall_t:.2f}x |")
print(f"| serial: compute + disk | {serial:.2f} | {serial / ucpu_t:.2f}x | {serial / uwall_t:.2f}x |")
print()
shim_ns = [n for n in sorted(runs) if runs[n]["variant"] != "unconstrained" and all(p in phases.get(n, {}) for p in PH)]
for n in shim_ns:
    ps = phases[n]
    s = sum(num(ps[p], "s") for p in PH)
    nq = sum(num(ps[p], "s") - num(ps[p], "runq_s") for p in PH)
    rd = sum(num(ps[p], "dev_read_mib") for p in PH)
    wr = sum(num(ps[p], "dev_write_mib") for p in PH)
    print(f"- {runs[n]['variant']} run {n}: {s:.2f} s ({s / over:.2f}x the overlapped floor), {nq:.2f} s without its run-queue wait "
          f"({nq / over:.2f}x); device wrote {wr:.0f} MiB, read {rd:.0f} MiB (floor: {must / MiB:.0f} each)")
for n in sorted(stats):
    print(f"- {runs[n]['variant']} run {n} stats: `{stats[n][:600]}`")
