#!/usr/bin/python3
"""report.py — turns tests/bench/results.csv into the printed table,
RESULTS.md and the PNG plots. Called by run.sh; can be re-run by hand:

  /usr/bin/python3 tests/bench/report.py --csv tests/bench/results.csv \
      --meta BUILD/bench-out/meta.txt --series BUILD/bench-out --out tests/bench

Every number in RESULTS.md comes from results.csv (or, for the memory plot,
the usage series cgrun wrote into --series). Statistics: "median [min-max]"
over rounds; a ratio is computed per round between variants measured in the
same round (they ran back to back), then summarised the same way.
"""
import argparse
import csv
import glob
import math
import os
import statistics
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ALLOCS = ["glibc", "mimalloc", "jemalloc", "tcmalloc", "spillway"]
WORKLOADS = ["larson", "xmalloc", "cache-scratch", "g++", "python3", "startup"]
WORKLOAD_DOC = {
    "larson": "tests/bench/larson.c: 2 threads, 1000 live blocks each (16-512 B), random replace; tables "
              "rotate to new threads every round (cross-thread frees, thread churn)",
    "xmalloc": "tests/bench/xmalloc.c: 2 producers allocate batches (16-256 B, some to 4 KiB), 2 consumers "
               "free them (every free is cross-thread)",
    "cache-scratch": "tests/bench/cache_scratch.c: 2 threads free an object main allocated next to the "
                     "other's, then allocate/write/free 8-byte objects (passive false sharing)",
    "g++": "g++ -O2 -c tests/bench/compile_me.cpp (STL- and template-heavy; the preload reaches cc1plus)",
    "python3": "/usr/bin/python3 tests/bench/pywork.py: dicts, lists, f-strings, JSON round trips, sorting",
    "startup": "a shell starting /bin/true 100-200 times: the allocator's load and start-up cost per process",
}
COLORS = {"glibc": "#7f7f7f", "mimalloc": "#1f77b4", "jemalloc": "#2ca02c", "tcmalloc": "#9467bd",
          "spillway": "#d62728", "mmap": "#7f7f7f", "mmap-thp": "#bcbd22", "anon": "#ff7f0e",
          "memory": "#17becf", "disk": "#d62728"}


def load(path):
    data = defaultdict(dict)  # (bench, variant, param, metric) -> {round: value}
    units = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            try:
                v = float(r["value"])
            except ValueError:
                continue
            key = (r["bench"], r["variant"], r["param"], r["metric"])
            data[key][int(r["round"])] = v
            units[key] = r["unit"]
    return data, units


def load_meta(path):
    meta = {}
    if path and os.path.exists(path):
        for line in open(path):
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    return meta


def summary(vals):
    vals = [v for v in vals if v is not None and not math.isnan(v)]
    if not vals:
        return None
    return statistics.median(vals), min(vals), max(vals)


def fmt_num(x):
    if x is None:
        return "-"
    a = abs(x)
    if a >= 1000:
        return f"{x:,.0f}"
    if a >= 100:
        return f"{x:.0f}"
    if a >= 10:
        return f"{x:.1f}"
    if a >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt(s, ratio=False):
    if s is None:
        return "-"
    m, lo, hi = s
    f = (lambda x: f"{x:.3f}") if ratio else fmt_num
    if lo == hi:
        return f(m) + ("x" if ratio else "")
    return f"{f(m)}{'x' if ratio else ''} [{f(lo)}-{f(hi)}]"


class Results:
    def __init__(self, data):
        self.data = data

    def series(self, bench, variant, param, metric):
        return self.data.get((bench, variant, param, metric), {})

    def stat(self, bench, variant, param, metric):
        return summary(list(self.series(bench, variant, param, metric).values()))

    def ratio(self, bench, num, den, param, metric, invert=False, num_param=None):
        a = self.series(bench, num, num_param or param, metric)
        b = self.series(bench, den, param, metric)
        rs = []
        for r in a:
            if r in b and a[r] and b[r]:
                rs.append(b[r] / a[r] if invert else a[r] / b[r])
        return summary(rs)

    def diff(self, bench, a_var, b_var, param, metric):
        a = self.series(bench, a_var, param, metric)
        b = self.series(bench, b_var, param, metric)
        return summary([a[r] - b[r] for r in a if r in b])

    def params(self, bench, variant=None, metric=None):
        out = []
        for (b, v, p, m) in self.data:
            if b == bench and (variant is None or v == variant) and (metric is None or m == metric):
                if p not in out:
                    out.append(p)
        return out

    def variants(self, bench):
        out = []
        for (b, v, _, _) in self.data:
            if b == bench and v not in out:
                out.append(v)
        return out


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def size_key(p):
    num = "".join(ch for ch in p if ch.isdigit() or ch == ".")
    mult = 1024 if "GiB" in p or p.endswith("G") else 1
    try:
        return float(num) * mult
    except ValueError:
        return 0


def human_size(s):
    """'2G' -> '2 GiB', '512M' -> '512 MiB' (run.sh passes sizes the way the programs take them)."""
    if s and s[-1] in "MG" and s[:-1].replace(".", "").isdigit():
        return f"{s[:-1]} {s[-1]}iB"
    return s


def verdict(ok):
    return "**met**" if ok else "**not met**"


# ------------------------------------------------------------------ sections

def section_small(R, md, figs, out):
    if not R.params("small"):
        return
    allocs = [a for a in ALLOCS if a in R.variants("small")]
    rows = []
    spill_vs_mi = []
    for w in WORKLOADS:
        if not R.series("small", "glibc", w, "wall_s") and not R.series("small", "mimalloc", w, "wall_s"):
            continue
        for a in allocs:
            failed = R.series("small", a, w, "failed")
            rows.append([w, a, fmt(R.stat("small", a, w, "wall_s")), fmt(R.stat("small", a, w, "cpu_s")),
                         fmt(R.stat("small", a, w, "maxrss_MiB")),
                         fmt(R.ratio("small", a, "mimalloc", w, "wall_s"), True),
                         fmt(R.ratio("small", a, "mimalloc", w, "cpu_s"), True),
                         fmt(R.ratio("small", a, "glibc", w, "wall_s"), True),
                         fmt(R.ratio("small", a, "mimalloc", w, "maxrss_MiB"), True)
                         + (f" ({len(failed)} runs failed)" if failed else "")])
        s = R.ratio("small", "spillway", "mimalloc", w, "wall_s")
        c = R.ratio("small", "spillway", "mimalloc", w, "cpu_s")
        if s:
            spill_vs_mi.append((w, s[0], c[0] if c else None))
    md.append("## Small path: allocation-heavy programs\n")
    md.append("Wall time, CPU time (user + system) and peak RSS (ru_maxrss of the process tree, "
              "from wait4) of each program under each allocator (`LD_PRELOAD`; glibc = no preload). "
              "The order of the allocators rotates every round. Ratios are per round against "
              "mimalloc / glibc measured in the same round: median [min-max] over rounds. Below 1.0 "
              "= faster (or smaller) than the reference. On a loaded machine CPU time is the steadier "
              "of the two.\n")
    md.append(md_table(["workload", "what it runs"], [[w, WORKLOAD_DOC[w]] for w in WORKLOADS]) + "\n")
    md.append(md_table(["workload", "allocator", "wall s", "CPU s", "peak RSS MiB", "wall vs mimalloc",
                        "CPU vs mimalloc", "wall vs glibc", "RSS vs mimalloc"], rows))
    if spill_vs_mi:
        def gmean(xs):
            xs = [x for x in xs if x]
            return math.exp(statistics.mean(math.log(x) for x in xs)) if xs else math.nan
        gm = gmean(r for _, r, _ in spill_vs_mi)
        gc = gmean(c for _, _, c in spill_vs_mi)
        alloc_only = [t for t in spill_vs_mi if t[0] != "startup"]
        gm_a = gmean(r for _, r, _ in alloc_only)
        gc_a = gmean(c for _, _, c in alloc_only)
        worst = max(spill_vs_mi, key=lambda t: t[1])
        beats = []
        for w, _, _ in spill_vs_mi:
            g = R.ratio("small", "spillway", "glibc", w, "wall_s")
            if g:
                beats.append(g[0] < 1.0)
        md.append(f"\nSpillway vs bare mimalloc, geometric mean of the per-workload median ratios: wall "
                  f"**{gm:.3f}x**, CPU **{gc:.3f}x**; without the start-up workload: wall {gm_a:.3f}x, "
                  f"CPU {gc_a:.3f}x (worst wall: {worst[0]} {worst[1]:.3f}x). Goal: within 3% of "
                  f"mimalloc ({verdict(gm <= 1.03)} on wall time, {verdict(gc <= 1.03)} on CPU time) and "
                  f"ahead of glibc ({sum(beats)} of {len(beats)} workloads on wall time).\n")
    # plot: time ratio vs mimalloc, grouped by workload
    fig, ax = plt.subplots(figsize=(9, 4))
    ws = [w for w in WORKLOADS if R.series("small", "mimalloc", w, "wall_s")]
    width = 0.8 / max(1, len(allocs))
    for i, a in enumerate(allocs):
        meds, los, his = [], [], []
        for w in ws:
            s = R.ratio("small", a, "mimalloc", w, "wall_s") or (math.nan, math.nan, math.nan)
            meds.append(s[0]); los.append(s[0] - s[1]); his.append(s[2] - s[0])
        xs = [j + (i - (len(allocs) - 1) / 2) * width for j in range(len(ws))]
        ax.bar(xs, meds, width, yerr=[los, his], capsize=2, label=a, color=COLORS.get(a))
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks(range(len(ws)))
    ax.set_xticklabels(ws)
    ax.set_ylabel("wall time / mimalloc (same round)")
    ax.set_title("Small path: time relative to bare mimalloc (median, min-max over rounds)")
    ax.legend(ncol=5, fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "small-path.png"), dpi=90)
    plt.close(fig)
    figs.append(("small-path.png", "Small path: wall time relative to mimalloc"))


def section_large(R, md, figs, out):
    if not R.params("large_latency") and not R.params("large_seqwrite"):
        return
    md.append("## Large path: by backing\n")
    md.append("Variants: **mmap** = a plain private anonymous mapping (what glibc's malloc returns "
              "at these sizes; the reference called *anonymous* below), **mmap-thp** = the same with "
              "`MADV_HUGEPAGE` (what numpy does), and the shim's three backings chosen with "
              "`SPILLWAY_POLICY`: **disk** (reserved spill file, `MAP_SHARED`), **memory** (memfd), "
              "**anon**. Each figure is the median of the in-process repetitions, then median "
              "[min-max] over rounds.\n")
    order = ["mmap", "mmap-thp", "anon", "memory", "disk"]
    # latency
    lat_vars = [v for v in order if v in R.variants("large_latency")]
    if lat_vars:
        rows = []
        for p in sorted(R.params("large_latency"), key=size_key):
            rows.append([p] + [fmt(R.stat("large_latency", v, p, "first_byte_us")) for v in lat_vars] +
                        [fmt(R.ratio("large_latency", "disk", "mmap", p, "first_byte_us"), True)])
        md.append("### Allocation latency: call to first usable byte (µs)\n")
        md.append("`malloc(size)` (or `mmap`) and the write of its first byte, timed together.\n")
        md.append(md_table(["size"] + lat_vars + ["disk / mmap"], rows) + "\n")
    # sequential first touch
    seq_vars = [v for v in order if v in R.variants("large_seqwrite")]
    if seq_vars:
        rows = []
        goal_rows = []
        for p in sorted(R.params("large_seqwrite"), key=lambda p: ("idle" in p, size_key(p))):
            state = "warm" if p.endswith("warm") else "idle"
            for v in seq_vars:
                if not R.series("large_seqwrite", v, p, "GBps"):
                    continue
                vs_anon = R.ratio("large_seqwrite", v, "mmap", p, "GBps", invert=True)
                vs_thp = R.ratio("large_seqwrite", v, "mmap-thp", p, "GBps", invert=True)
                rows.append([p, v, fmt(R.stat("large_seqwrite", v, p, "GBps")),
                             fmt(R.stat("large_seqwrite", v, p, "alloc_ms")),
                             fmt(R.stat("large_seqwrite", v, p, "touch_faults")),
                             fmt(vs_anon, True), fmt(vs_thp, True)])
                if v == "disk" and vs_anon:
                    goal_rows.append((state, vs_anon))
        md.append("### First-touch sequential write throughput\n")
        md.append("A fresh region is allocated and written front to back (`memset` in 1 MiB steps); "
                  "GB/s includes the allocation. **warm**: the same amount of anonymous memory was "
                  "touched (with 2 MiB pages) and unmapped immediately before, so the guest's free "
                  "memory is backed by the host. **idle**: the process slept first; this VM reports "
                  "free pages to the host (virtio-balloon free page reporting), so after a few idle "
                  "seconds first touches also pay the host's faults. The time ratios (variant time / "
                  "reference time, same round) are the goal's measure: above 1.0 = slower.\n")
        md.append(md_table(["case", "variant", "GB/s", "alloc ms", "page faults", "time vs anonymous (mmap)",
                            "time vs mmap-thp"], rows) + "\n")
        for state, s in goal_rows:
            md.append(f"- Spill region (disk) sequential first touch, {state}: **{fmt(s, True)}** the time "
                      f"of anonymous memory; goal <= 1.5x: {verdict(s[0] <= 1.5)} "
                      f"(published figure to beat: ~3.1x).")
        for p in sorted(R.params("large_seqwrite"), key=lambda p: ("idle" in p, size_key(p))):
            thp = R.ratio("large_seqwrite", "mmap-thp", "mmap", p, "GBps", invert=True)
            dthp = R.ratio("large_seqwrite", "disk", "mmap-thp", p, "GBps", invert=True)
            if thp and dthp:
                md.append(f"- {p}: anonymous memory with 2 MiB pages (mmap-thp) takes {fmt(thp, True)} the time of "
                          f"4 KiB anonymous pages, and the spill file (2 MiB folios) {fmt(dthp, True)} the time of "
                          f"mmap-thp. A spill file's page cache is allocated in 2 MiB folios, so it pays what any "
                          f"2 MiB allocation pays in that state.")
        md.append("")
    # random writes
    rnd_vars = [v for v in order if v in R.variants("large_randwrite")]
    if rnd_vars:
        rows = []
        for p in R.params("large_randwrite"):
            for v in rnd_vars:
                rows.append([p, v, fmt(R.stat("large_randwrite", v, p, "first_touch_ns")),
                             fmt(R.stat("large_randwrite", v, p, "resident_ns")),
                             fmt(R.stat("large_randwrite", v, p, "evicted_default_ns")),
                             fmt(R.stat("large_randwrite", v, p, "evicted_random_advice_ns")),
                             fmt(R.ratio("large_randwrite", v, "mmap", p, "first_touch_ns"), True)])
        md.append("### Random 8-byte writes (ns per write)\n")
        md.append("Uniformly random aligned 8-byte stores into a fresh region (first touch: most "
                  "pages fault once), then the same number again (resident). For disk only: after "
                  "`spillway_release_page_cache` (pages written back and evicted), with the default "
                  "readahead and with `MADV_RANDOM`.\n")
        md.append(md_table(["size", "variant", "first touch", "resident", "evicted (default advice)",
                            "evicted (MADV_RANDOM)", "first touch vs mmap"], rows) + "\n")
    # free
    free_vars = [v for v in order if v in R.variants("large_free")]
    if free_vars:
        rows = []
        worst = {}
        for p in R.params("large_free"):
            for v in free_vars:
                c = R.stat("large_free", v, p, "caller_us")
                mx = R.stat("large_free", v, p, "caller_max_us")
                rows.append([p, v, fmt(c), fmt(mx), fmt(R.stat("large_free", v, p, "rss_released_us"))])
                if v != "mmap" and c:
                    worst[v] = (c[0], mx[2] if mx else None)
        md.append("### free() of a dirty region\n")
        md.append("The region is fully written, then freed. *caller* is the time `free()` (or "
                  "`munmap`) takes in the calling thread: median of the repetitions, and the worst "
                  "repetition. *RSS released* is until half the region has left the process RSS "
                  "(the shim unmaps in a background thread).\n")
        md.append(md_table(["size", "variant", "caller µs (median)", "caller µs (worst rep)",
                            "RSS released µs"], rows) + "\n")
        if worst:
            med_ok = all(m < 100 for m, _ in worst.values())
            tail_ok = all(t is not None and t < 100 for _, t in worst.values())
            md.append(f"- Goal: free of any region < 100 µs for the caller. Median: {verdict(med_ok)}; "
                      f"every repetition: {verdict(tail_ok)} (worst "
                      + ", ".join(f"{v} {fmt_num(t)} µs" for v, (_, t) in worst.items()) + ").\n")
    # plot
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    ax = axes[0]
    for v in lat_vars:
        ps = sorted(R.params("large_latency", v), key=size_key)
        ys = [R.stat("large_latency", v, p, "first_byte_us") for p in ps]
        ax.errorbar(range(len(ps)), [y[0] for y in ys], yerr=[[y[0] - y[1] for y in ys], [y[2] - y[0] for y in ys]],
                    marker="o", capsize=3, label=v, color=COLORS.get(v))
        ax.set_xticks(range(len(ps)))
        ax.set_xticklabels(ps)
    ax.set_yscale("log")
    ax.set_ylabel("µs")
    ax.set_title("call to first usable byte")
    ax.legend(fontsize=8)
    ax = axes[1]
    cases = sorted(R.params("large_seqwrite"), key=lambda p: ("idle" in p, size_key(p)))
    width = 0.8 / max(1, len(seq_vars))
    for i, v in enumerate(seq_vars):
        ys = [R.stat("large_seqwrite", v, c, "GBps") or (math.nan,) * 3 for c in cases]
        xs = [j + (i - (len(seq_vars) - 1) / 2) * width for j in range(len(cases))]
        ax.bar(xs, [y[0] for y in ys], width, yerr=[[y[0] - y[1] for y in ys], [y[2] - y[0] for y in ys]],
               capsize=2, label=v, color=COLORS.get(v))
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels(cases)
    ax.set_ylabel("GB/s")
    ax.set_title("first-touch sequential write")
    ax.legend(fontsize=8)
    ax = axes[2]
    for i, v in enumerate(free_vars):
        for p in R.params("large_free", v):
            s = R.stat("large_free", v, p, "caller_us")
            mx = R.stat("large_free", v, p, "caller_max_us")
            ax.bar(i, s[0], color=COLORS.get(v))
            if mx:
                ax.plot([i], [mx[2]], marker="v", color="black")
    ax.axhline(100, color="black", ls="--", lw=0.8)
    ax.text(len(free_vars) - 0.5, 100, "goal 100 µs", ha="right", va="bottom", fontsize=8)
    ax.set_xticks(range(len(free_vars)))
    ax.set_xticklabels(free_vars)
    ax.set_yscale("log")
    ax.set_ylabel("µs (bar: median, ▼: worst rep)")
    ax.set_title("free() of a dirty region, caller's view")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "large-path.png"), dpi=80)
    plt.close(fig)
    figs.append(("large-path.png", "Large path by backing"))


def section_pycallsite(R, md):
    if not R.params("pycallsite"):
        return
    rows = []
    for p in R.params("pycallsite"):
        for m, label in [("numpy_us", "np.empty, one site, 12 Python calls deep"),
                         ("torch_us", "torch.empty, one site, 12 Python calls deep"),
                         ("new_line_us", "np.empty, first from each of 200 Python lines")]:
            if not R.series("pycallsite", "py-on", p, m):
                continue
            rows.append([label, fmt(R.stat("pycallsite", "py-on", p, m)), fmt(R.stat("pycallsite", "py-off", p, m)),
                         fmt(R.stat("pycallsite", "sites-off", p, m)), fmt(R.diff("pycallsite", "py-on", "py-off", p, m))])
    md.append("## Python call sites: capture cost per large allocation\n")
    md.append("1 MiB numpy arrays / torch tensors at the threshold (policy anon, never touched), allocated "
              "and freed from Python (tests/bench/pycallsite.py), median over the allocations; *Python "
              "capture* = `python_depth = 4` - `python_depth = 0`, paired per round. Budget: 20 µs.\n")
    md.append(md_table(["allocation", "Python capture on µs", "native only µs", "no call sites µs",
                        "Python capture µs"], rows) + "\n")


def section_callsite(R, md):
    if not R.params("callsite"):
        return
    rows = []
    for p in R.params("callsite"):
        for pol in ["anon", "disk"]:
            on, off = f"{pol}-on", f"{pol}-off"
            if not R.series("callsite", on, p, "cold_us"):
                continue
            for m, label in [("cold_us", "cold (first allocation from each of 511 sites)"),
                             ("warm_same_us", "warm, one site"),
                             ("warm_many_us", "warm, 511 sites in turn")]:
                rows.append([pol, label, fmt(R.stat("callsite", on, p, m)), fmt(R.stat("callsite", off, p, m)),
                             fmt(R.diff("callsite", on, off, p, m))])
    md.append("## Call sites: capture + decision cost per large allocation\n")
    md.append("`malloc` of a region at the threshold (`SPILLWAY_THRESHOLD=1MiB`, 1 MiB requests, never "
              "touched) timed alone, median over the allocations; *capture cost* = enabled - disabled "
              "(`[callsites] enabled = false`), paired per round. The backing's own cost (mapping, "
              "and for disk the `fallocate`) is in both columns.\n")
    md.append(md_table(["policy", "allocations", "call sites enabled µs", "disabled µs",
                        "capture + decision µs"], rows) + "\n")


def section_control(R, md):
    if not R.params("control"):
        return
    rows = []
    for p in R.params("control"):
        rows.append([p, fmt(R.stat("control", "disk", p, "residency_ms")),
                     fmt(R.stat("control", "disk", p, "release_ms")),
                     fmt(R.stat("control", "disk", p, "residency_after_ms")),
                     fmt(R.stat("control", "disk", p, "resident_before_MiB")),
                     fmt(R.stat("control", "disk", p, "resident_after_MiB"))])
    md.append("## Control API on spill regions\n")
    md.append("A disk-backed region with its first part written. `spillway_residency` over the whole "
              "region (mincore), `spillway_release_page_cache` (write back, drop page-table entries, "
              "`POSIX_FADV_DONTNEED`), then residency again.\n")
    md.append(md_table(["region", "residency ms", "release ms", "residency after ms",
                        "resident before MiB", "resident after MiB"], rows) + "\n")


def section_limit(R, md, figs, out, series_dir, limit_label, meta):
    if not R.params("limit"):
        return
    total = next((p for p in R.params("limit") if p != "dd-1GiB"), None)
    if not total:
        return
    order = ["glibc-unlimited", "spillway-unlimited", "spillway-limited", "glibc-limited"]
    rows = []
    for v in order:
        if not R.series("limit", v, total, "wall_s"):
            continue
        killed = R.series("limit", v, total, "killed")
        ooms = R.series("limit", v, total, "oom_kills")
        outcome = (f"killed in {sum(1 for x in killed.values() if x)} of {len(killed)} rounds "
                   f"(OOM kills: {int(sum(ooms.values()))})" if any(killed.values()) else "completed")
        rows.append([v, fmt(R.stat("limit", v, total, "wall_s")), fmt(R.stat("limit", v, total, "write_s")),
                     fmt(R.stat("limit", v, total, "read_s")), fmt(R.stat("limit", v, total, "max_usage_MiB")),
                     outcome])
    md.append(f"## Under a memory limit: a sequential job writing {human_size(total)} with a "
              f"{human_size(limit_label)} cgroup limit\n")
    md.append(f"`seqjob` allocates {human_size(total)} in 256 MiB buffers with `malloc`, fills each front to back, keeps "
              "them all, then reads everything back and verifies it. It runs in a fresh cgroup-v1 memory "
              "cgroup (`memory.limit_in_bytes` and `memory.memsw.limit_in_bytes` set), alternately "
              "with and without the shim, and unconstrained (a cgroup without a limit) as the reference.\n")
    md.append(md_table(["variant", "wall s", "write phase s", "read phase s", "peak cgroup usage MiB",
                        "outcome"], rows) + "\n")
    r1 = R.ratio("limit", "spillway-limited", "glibc-unlimited", total, "wall_s")
    r2 = R.ratio("limit", "spillway-limited", "spillway-unlimited", total, "wall_s")
    rw = R.ratio("limit", "spillway-limited", "glibc-unlimited", total, "write_s")
    bw = R.stat("limit", "disk", "dd-1GiB", "write_MBps")
    if r1:
        md.append(f"- Shim under the limit vs unconstrained without the shim: **{fmt(r1, True)}** "
                  f"(goal <= 2x: {verdict(r1[0] <= 2.0)}); vs unconstrained with the shim: {fmt(r2, True)}; "
                  f"write phase alone: {fmt(rw, True)}.")
    if bw and r1:
        def to_bytes(s):
            return size_key(s) * (1 << 20) if "M" in s or "G" in s else float(s)
        spill_bytes = to_bytes(total) - to_bytes(limit_label)
        bound = spill_bytes / (bw[0] * 1e6)
        base = R.stat("limit", "glibc-unlimited", total, "wall_s")
        if base:
            md.append(f"- Physics: at least {fmt_num(spill_bytes / 2**20)} MiB must go to disk and be read back. "
                      f"The spill disk wrote {fmt_num(bw[0])} MB/s (dd, 1 GiB, fdatasync, same run), so "
                      f"writing it out alone takes >= {bound:.2f} s, i.e. >= {(base[0] + bound) / base[0]:.2f}x "
                      f"the unconstrained {base[0]:.2f} s before any read-back.")
    md.append("")
    # plot
    fig, ax = plt.subplots(figsize=(9, 4.2))
    styles = {"spillway-limited": ("#d62728", "-", "with spillway, limited"),
              "glibc-limited": ("#1f77b4", "-", "without the shim (glibc), limited"),
              "glibc-unlimited": ("#7f7f7f", ":", "without the shim, no limit (reference)"),
              "spillway-unlimited": ("#ff9896", ":", "with spillway, no limit")}
    for v in ["glibc-unlimited", "spillway-unlimited", "glibc-limited", "spillway-limited"]:
        files = sorted(glob.glob(os.path.join(series_dir, f"usage-{v}-r*.csv")))
        if not files:
            continue
        ts, us = [], []
        with open(files[0]) as f:
            for r in csv.DictReader(f):
                u = float(r["usage_bytes"])
                if u >= 0:
                    ts.append(float(r["t_s"]))
                    us.append(u / 2**20)
        if not ts:
            continue
        color, ls, label = styles[v]
        killed = R.series("limit", v, total, "killed").get(int(files[0].rsplit("-r", 1)[1].split(".")[0]), 0)
        ax.plot(ts, us, color=color, ls=ls, lw=1.6 if ls == "-" else 1.2,
                label=label + (" — OOM-killed" if killed else ""))
        if killed:
            ax.plot([ts[-1]], [max(us)], marker="X", ms=12, color=color)
            ax.annotate("OOM kill", (ts[-1], max(us)), textcoords="offset points", xytext=(8, 8),
                        color=color, fontsize=9)
    limit_mib = size_key(limit_label) if "M" in limit_label or "G" in limit_label else 0
    if limit_mib:
        ax.axhline(limit_mib, color="black", ls="--", lw=0.8)
        ax.text(ax.get_xlim()[1], limit_mib, f" limit {human_size(limit_label)}", va="bottom", ha="right",
                fontsize=8)
    ax.set_xlabel("seconds since start")
    ax.set_ylabel("cgroup memory.usage_in_bytes (MiB)")
    ax.set_title(f"A job writing {human_size(total)} under a {human_size(limit_label)} memory limit (cgroup v1)")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "memory-under-limit.png"), dpi=90)
    plt.close(fig)
    figs.insert(0, ("memory-under-limit.png", "cgroup memory usage over time, with and without the shim"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", required=True)
    ap.add_argument("--meta")
    ap.add_argument("--series", default=".")
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", default="512M")
    a = ap.parse_args()
    data, _ = load(a.csv)
    meta = load_meta(a.meta)
    R = Results(data)
    limit_label = a.limit.replace("M", "MiB").replace("G", "GiB") if a.limit[-1] in "MG" else a.limit
    figs, body = [], []
    section_small(R, body, figs, a.out)
    section_large(R, body, figs, a.out)
    section_callsite(R, body)
    section_pycallsite(R, body)
    section_control(R, body)
    lim = []
    section_limit(R, lim, figs, a.out, a.series, a.limit, meta)
    head = ["# spillway benchmark results", "",
            "Generated by `tests/bench/run.sh` (report.py) from `results.csv`; do not edit by hand.", ""]
    info = [f"{k}: {meta[k]}" for k in ["mode", "date", "commit", "kernel", "cpus", "mem_gib", "thp", "shmem_thp",
                                        "spill_fs", "cgroup", "load_start", "load_end", "elapsed_s", "rounds",
                                        "large_rounds"] if k in meta]
    pk = [f"{k[4:]} {meta[k]}" for k in meta if k.startswith("pkg_")]
    md = head
    if any(f == "memory-under-limit.png" for f, _ in figs):
        md += ["![cgroup memory usage over time, with and without the shim](memory-under-limit.png)", ""]
    md += ["Run: " + "; ".join(info) + ("; packages: " + ", ".join(pk) if pk else "") + ".", "",
           "The machine is shared and noisy: compare the ratios (variants measured back to back in the same "
           "round, in rotating order), not absolute numbers across runs. `median [min-max]` is over rounds.", ""]
    md += lim + body
    for f, title in figs:
        if f != "memory-under-limit.png":
            md.append(f"![{title}]({f})\n")
    text = "\n".join(md).replace("\n\n\n", "\n\n")
    with open(os.path.join(a.out, "RESULTS.md"), "w") as f:
        f.write(text + "\n")
    # the table on the terminal: the same markdown, without the image links
    sys.stdout.write("\n".join(line for line in text.splitlines() if not line.startswith("![")) + "\n")


if __name__ == "__main__":
    main()
