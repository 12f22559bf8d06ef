"""jobs_report.py — the markdown report of tests/bench/jobs.sh from its records.

Usage: jobs_report.py RECORDS
RECORDS holds the lines jobs.sh writes: META (free text), FLOOR round=N ...,
RUN job= variant= round= status= wall_s= ..., PHASE job= variant= round=
phase= s= .... Every ratio is taken inside one round (the variant's run
against the unconstrained run of the same round) and then the median over
rounds is printed, with each round's value in brackets when there are more.
"""
import statistics
import sys

from records import fields
from collections import defaultdict

VARIANTS = ["unconstrained", "swap", "shim", "bare"]




def num(x, default=float("nan")):
    try:
        return float(x)
    except (TypeError, ValueError):
        return default


def med(xs):
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else float("nan")


def fmt_x(xs):
    xs = [x for x in xs if x == x]
    if not xs:
        return "-"
    m = f"{med(xs):.2f}x"
    return m + (" [" + " ".join(f"{x:.2f}" for x in xs) + "]" if len(xs) > 1 else "")


def fmt_s(xs):
    xs = [x for x in xs if x == x]
    return f"{med(xs):.1f}" if xs else "-"


meta, floors, runs, phases = [], [], {}, defaultdict(dict)
for line in open(sys.argv[1]):
    if line.startswith("META "):
        meta.append(line[5:].strip())
    elif line.startswith("FLOOR "):
        floors.append(fields(line))
    elif line.startswith("RUN "):
        f = fields(line)
        runs[(f["job"], f["variant"], int(f["round"]))] = f
    elif line.startswith("PHASE "):
        f = fields(line)
        phases[(f["job"], f["variant"], int(f["round"]))][f["phase"]] = f

jobs = list(dict.fromkeys(k[0] for k in runs))
rounds = sorted({k[2] for k in runs})


def ok(r):
    return r is not None and r["status"] == "0"


def outcome(r, phase_names):
    """What a run that did not finish got to: killed/timeout, when, where."""
    done = [p for p in phase_names if p in phases[(r["job"], r["variant"], int(r["round"]))]]
    where = f"after {done[-1]}" if done else "in its first phase"
    st = r["status"]
    if st == "124":
        why = "timeout"
    elif r.get("oom_kills", "0") not in ("0", "-1") or st == "137":
        why = "OOM-killed"
    else:
        why = f"exit {st}"
    return f"{why} at {num(r['wall_s']):.0f} s, {where}"


def phase_order(job):
    names = []
    for v in VARIANTS:
        for rd in rounds:
            for p in phases.get((job, v, rd), {}):
                if p not in names:
                    names.append(p)
    return names


print("Generated " + "; ".join(m for m in meta if m.startswith("date=") or m.startswith("commit=")) + ".")
print()
for m in meta:
    if not (m.startswith("date=") or m.startswith("commit=")):
        print(f"- {m}")
print()
print("Floor of the spill filesystem (O_DIRECT; round 0 writes the 1 GiB file, each round reads it again):")
print()
print("| round | 4 KiB random read, median | p90 | sequential read | sequential write |")
print("|---|---|---|---|---|")
for f in floors:
    w = f.get("seq_write_MBps", "0")
    print(f"| {f['round']} | {f['lat_med_us']} us | {f['lat_p90_us']} us | {f['seq_read_MBps']} MB/s | "
          f"{w + ' MB/s' if w != '0' else '-'} |")
print()
print("Wall time of the whole process (Python start-up included); x = against the unconstrained run of the")
print("same round; median over rounds, each round in brackets. Peak: the unconstrained run's cgroup peak.")
print("Shim CPU x: CPU seconds of the job's own threads over its phases (schedstat), shim against")
print("unconstrained: the work the shim and the kernel did for it, far less sensitive to the load than")
print("wall time. Run-queue wait removed (single-threaded jobs only): the sums of the phases with each")
print("phase's run-queue wait (the job runnable without a CPU: the machine's other load) taken out on")
print("both sides, an estimate of the ratio on a quiet machine. Load: the 1-minute load average at the")
print("start and end of each of the job's runs (2 CPUs).")
print()
print("| job | limit | peak (x limit) | unconstrained s | swap s | swap x | shim s | shim x | shim / swap "
      "| bare, under the limit | shim, per phase x | shim CPU x | shim x, run-queue wait removed | load |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for job in jobs:
    names = phase_order(job)
    lim = peak = float("nan")
    wall = defaultdict(list)
    ratio = defaultdict(list)
    shim_swap = []
    notes = {}
    for rd in rounds:
        u = runs.get((job, "unconstrained", rd))
        for v in VARIANTS:
            r = runs.get((job, v, rd))
            if r is None:
                continue
            lim = num(r["limit"]) / 2**20
            if not ok(r):
                notes.setdefault(v, []).append(outcome(r, names))
                continue
            wall[v].append(num(r["wall_s"]))
            if ok(u):
                ratio[v].append(num(r["wall_s"]) / num(u["wall_s"]))
        if ok(u):
            peak = num(u["peak_mib"])
        sw, sh = runs.get((job, "swap", rd)), runs.get((job, "shim", rd))
        if ok(sw) and ok(sh):
            shim_swap.append(num(sh["wall_s"]) / num(sw["wall_s"]))

    def cell_s(v):
        s = fmt_s(wall[v])
        if v in notes:
            s = (s + "; " if wall[v] else "") + "; ".join(notes[v])
        return s

    per_phase = []
    for p in names:
        xs = []
        for rd in rounds:
            a = phases[(job, "unconstrained", rd)].get(p)
            b = phases[(job, "shim", rd)].get(p)
            if a and b and num(a["s"]) > 0:
                xs.append(num(b["s"]) / num(a["s"]))
        if xs:
            per_phase.append(f"{p} {med(xs):.2f}")
    # what others' load added: the phases' time spent runnable without a CPU
    # taken out of both sides; an estimate, and only for a job that ran on
    # one thread (cpu + run-queue <= wall in every phase): the figures of
    # several threads add up past the wall time and say nothing of it.
    quiet = []
    single = lambda x: "runq_s" in x and num(x["cpu_s"]) + num(x["runq_s"]) <= num(x["s"]) * 1.02 + 0.05
    for rd in rounds:
        a, b = phases[(job, "unconstrained", rd)], phases[(job, "shim", rd)]
        if a and b and ok(runs.get((job, "shim", rd))) and all(single(x) for x in list(a.values()) + list(b.values())):
            qa = sum(num(x["s"]) - num(x["runq_s"]) for x in a.values())
            qb = sum(num(x["s"]) - num(x["runq_s"]) for x in b.values())
            if qa > 0:
                quiet.append(qb / qa)
    # CPU of the job's own threads (all phases), shim against unconstrained:
    # what the shim and the kernel's work for it cost, whatever the load
    cpu_x = []
    for rd in rounds:
        a, b = phases[(job, "unconstrained", rd)], phases[(job, "shim", rd)]
        if a and b and ok(runs.get((job, "shim", rd))) and all("cpu_s" in x for x in list(a.values()) + list(b.values())):
            ca, cb = sum(num(x["cpu_s"]) for x in a.values()), sum(num(x["cpu_s"]) for x in b.values())
            if ca > 0:
                cpu_x.append(cb / ca)
    loads = [num(v) for (j, _, _), r in runs.items() if j == job for v in r.get("load", "").split("-") if v]
    load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
    runs_bare = [runs.get((job, "bare", rd)) for rd in rounds]
    bare_cells = []
    for r in runs_bare:
        if r is None:
            continue
        bare_cells.append(f"completed in {num(r['wall_s']):.1f} s" if ok(r) else outcome(r, names))
    print(f"| {job} | {lim:.0f} MiB | {peak:.0f} MiB ({peak / lim:.1f}x) | {cell_s('unconstrained')} | "
          f"{cell_s('swap')} | {fmt_x(ratio['swap'])} | {cell_s('shim')} | {fmt_x(ratio['shim'])} | "
          f"{fmt_x(shim_swap)} | {'; '.join(bare_cells) or '-'} | {', '.join(per_phase) or '-'} | {fmt_x(cpu_x)} | "
          f"{fmt_x(quiet)} | {load} |")

print()
print("Same results: every finished run of a job printed the same JOBRESULT:")
for job in jobs:
    got = defaultdict(list)
    for (j, v, rd), r in runs.items():
        if j == job and ok(r):
            got[r["result"]].append(f"{v}{rd}")
    verdict = "yes" if len(got) == 1 else "NO: " + "; ".join(f"{k} ({', '.join(v)})" for k, v in got.items())
    print(f"- {job}: {verdict}")
print()
print("Per phase (medians over rounds): seconds, and for the swap and shim runs x unconstrained, major")
print("faults of the job's process, MiB read from and written to the spill filesystem's device (spill")
print("files and the swap file alike):")
print()
print("| job | phase | unconstrained s (cpu / run-queue) | swap s (x) | swap majflt | swap read/write MiB "
      "| shim s (x) | shim cpu / run-queue s | shim majflt | shim minflt | shim read/write MiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for job in jobs:
    for p in phase_order(job):
        def col(v, key):
            return med([num(phases[(job, v, rd)][p].get(key)) for rd in rounds if p in phases[(job, v, rd)]])

        def xcol(v):
            xs = []
            for rd in rounds:
                a, b = phases[(job, "unconstrained", rd)].get(p), phases[(job, v, rd)].get(p)
                if a and b and num(a["s"]) > 0:
                    xs.append(num(b["s"]) / num(a["s"]))
            return f"{col(v, 's'):.2f} ({med(xs):.2f}x)" if xs else (f"{col(v, 's'):.2f}" if col(v, 's') == col(v, 's') else "-")

        def io(v):
            r, w = col(v, "dev_read_mib"), col(v, "dev_write_mib")
            return "-" if r != r else f"{r:.0f} / {w:.0f}"

        def n(v, key):
            x = col(v, key)
            return "-" if x != x else f"{x:.0f}"

        def sched(v):
            c, w = col(v, "cpu_s"), col(v, "runq_s")
            return "-" if c != c else f"{c:.1f} / {w:.1f}"

        print(f"| {job} | {p} | {col('unconstrained', 's'):.2f} ({sched('unconstrained')}) | {xcol('swap')} | "
              f"{n('swap', 'majflt')} | {io('swap')} | {xcol('shim')} | {sched('shim')} | {n('shim', 'majflt')} | "
              f"{n('shim', 'minflt')} | {io('shim')} |")
print()
print("Whole runs (medians over rounds): cgroup peak, cgroup major faults, MiB read from / written to the")
print("spill filesystem's device:")
print()
print("| job | variant | runs ok | wall s | peak MiB | memsw peak MiB | cgroup majflt | device read / write MiB |")
print("|---|---|---|---|---|---|---|---|")
for job in jobs:
    for v in VARIANTS:
        rs = [runs[(job, v, rd)] for rd in rounds if (job, v, rd) in runs]
        if not rs:
            continue
        m = lambda k: med([num(r[k]) for r in rs])
        print(f"| {job} | {v} | {sum(ok(r) for r in rs)}/{len(rs)} | {m('wall_s'):.1f} | {m('peak_mib'):.0f} | "
              f"{m('memsw_peak_mib'):.0f} | {m('cg_majflt'):.0f} | {m('dev_read_mib'):.0f} / {m('dev_write_mib'):.0f} |")
