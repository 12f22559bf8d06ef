#!/usr/bin/python3
"""ab.py — before/after comparison of two builds of libspillway.so on the
large path, run alternately (A, B, A, B, ...; the order flips every round).
Used to judge a proposed change to the shim with numbers from one run.

  /usr/bin/python3 tests/bench/ab.py --a OLD/libspillway.so --b NEW/libspillway.so \
      --bin BUILD/bench-bin [--rounds 5] [--spill-dir /var/tmp/spillway-bench] [--only free,latency,seq,limit]

--bin is the directory with the compiled benchmark programs (run.sh builds
them into BUILD/tests/bench or BUILD/bench-bin). Prints a markdown table:
median [min-max] over rounds for A and for B, and the per-round ratio B/A.
"""
import argparse
import os
import re
import statistics
import subprocess


def run(cmd, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    return p.stdout, p.stderr


def rows(stdout):
    out = {}
    for line in stdout.splitlines():
        f = line.split(",")
        if len(f) == 6:
            try:
                out[(f[1].split("@")[0], f[2], f[3])] = float(f[4])
            except ValueError:
                pass
    return out


def summ(v):
    if not v:
        return "-"
    m = statistics.median(v)
    return f"{m:.4g} [{min(v):.4g}-{max(v):.4g}]"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--spill-dir", default="/var/tmp/spillway-bench")
    ap.add_argument("--only", default="free,latency,seq,limit")
    a = ap.parse_args()
    lb = os.path.join(a.bin, "large_bench")
    tests = []
    only = a.only.split(",")
    for pol in ["anon", "disk"]:
        if "free" in only:
            tests.append((f"free {pol}", [lb, "freelat", "512M", "--reps", "8", "--variant", pol], {"SPILLWAY_POLICY": pol}))
        if "latency" in only:
            tests.append((f"latency {pol}", [lb, "latency", "64M", "1G", "4G", "--reps", "3", "--variant", pol],
                          {"SPILLWAY_POLICY": pol}))
        if "seq" in only:
            tests.append((f"seqwrite {pol}", [lb, "seqwrite", "1G", "--variant", pol], {"SPILLWAY_POLICY": pol}))
    if "limit" in only and os.path.isdir("/sys/fs/cgroup/memory") and os.geteuid() == 0:
        tests.append(("limit", [os.path.join(a.bin, "cgrun"), "--limit", "512M", "--name", f"ab{os.getpid()}", "--",
                                os.path.join(a.bin, "seqjob"), "2G", "256M"], {}))
    data = {}  # (test, key) -> {"A": [...], "B": [...], "ratio": [...]}
    for r in range(a.rounds):
        for name, cmd, env in tests:
            got = {}
            for label in (["A", "B"] if r % 2 == 0 else ["B", "A"]):
                lib = a.a if label == "A" else a.b
                e = dict(env, LD_PRELOAD=lib, SPILLWAY_DIR=a.spill_dir)
                if name == "limit":  # cgrun applies the environment to the job only
                    full = cmd[:1] + ["-e", f"LD_PRELOAD={lib}", "-e", f"SPILLWAY_DIR={a.spill_dir}"] + cmd[1:]
                    out, err = run(full, {})
                    m = re.search(r"wall_s=([0-9.]+) status=(\S+)", err)
                    got[label] = {("limit", "2G@512M", "wall_s"): float(m.group(1))} if m and m.group(2) == "0" else {}
                else:
                    out, _ = run(cmd, e)
                    got[label] = rows(out)
            for key in set(got["A"]) | set(got["B"]):
                d = data.setdefault((name, key), {"A": [], "B": [], "ratio": []})
                if key in got["A"]:
                    d["A"].append(got["A"][key])
                if key in got["B"]:
                    d["B"].append(got["B"][key])
                if key in got["A"] and key in got["B"] and got["A"][key]:
                    d["ratio"].append(got["B"][key] / got["A"][key])
        print(f"round {r + 1}/{a.rounds} done", flush=True)
    print("\n| test | metric | A | B | B/A (per round) |\n|---|---|---|---|---|")
    for (name, key), d in sorted(data.items()):
        print(f"| {name} | {key[1]} {key[2]} | {summ(d['A'])} | {summ(d['B'])} | {summ(d['ratio'])} |")


if __name__ == "__main__":
    main()
