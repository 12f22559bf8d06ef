#!/usr/bin/python3
"""pycallsite.py — cost of Python call-site capture per large allocation.

  /usr/bin/python3 tests/bench/pycallsite.py --shim BUILD/shim/libspillway.so \
      [--rounds 5] [--count 2000] [--spill-dir /var/tmp/spillway-bench]

Runs, alternately (the order rotates every round), a child process per
variant that allocates and frees COUNT 1 MiB numpy arrays and COUNT 1 MiB
torch tensors (never touched; threshold 1 MiB, policy anon, so the backing
costs little) from a Python stack 12 calls deep, and 200 arrays from 200
different Python lines (the first allocation of a new Python site):
  py-on      Python capture on ([callsites] python_depth = 4, the default)
  py-off     native frames only (python_depth = 0)
  sites-off  no call-site capture at all ([callsites] enabled = false)
Each child prints CSV rows (bench,variant,param,metric,value,unit); the
driver prints medians over rounds and the per-round difference on - off.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

VARIANTS = {
    "py-on": "[callsites]\npython_depth = 4\n",
    "py-off": "[callsites]\npython_depth = 0\n",
    "sites-off": "[callsites]\nenabled = false\n",
}
DEPTH = 12
LINES = 200


def child(variant, count):
    import numpy as np
    import torch

    size = 1 << 20

    def timed_numpy(n):
        out = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            a = np.empty(size, dtype=np.uint8)
            del a
            out.append((time.perf_counter_ns() - t0) / 1000)
        return out

    def timed_torch(n):
        out = []
        for _ in range(n):
            t0 = time.perf_counter_ns()
            t = torch.empty(size, dtype=torch.uint8)
            del t
            out.append((time.perf_counter_ns() - t0) / 1000)
        return out

    def nested(depth, fn, n):
        return nested(depth - 1, fn, n) if depth else fn(n)

    # 200 functions, each allocating on its own line: 200 Python sites.
    src = "\n".join(f"def f{i}(np, size):\n    return np.empty(size, dtype=np.uint8)" for i in range(LINES))
    ns = {}
    exec(compile(src, "lines.py", "exec"), ns)
    fns = [ns[f"f{i}"] for i in range(LINES)]

    nested(DEPTH, timed_numpy, 20)  # warm-up: first large allocation, reaper thread
    numpy_us = nested(DEPTH, timed_numpy, count)
    torch_us = nested(DEPTH, timed_torch, count)
    first_us = []
    for f in fns:
        t0 = time.perf_counter_ns()
        a = f(np, size)
        del a
        first_us.append((time.perf_counter_ns() - t0) / 1000)
    for metric, v in [("numpy_us", numpy_us), ("torch_us", torch_us), ("new_line_us", first_us)]:
        print(f"pycallsite,{variant},1M,{metric},{statistics.median(v):.6g},us", flush=True)


def driver(args):
    spill = args.spill_dir
    os.makedirs(spill, exist_ok=True)
    results = {}  # (variant, metric) -> [per round]
    with tempfile.TemporaryDirectory(prefix="spillway-pycallsite.") as tmp:
        configs = {}
        for v, text in VARIANTS.items():
            configs[v] = os.path.join(tmp, v + ".toml")
            with open(configs[v], "w") as f:
                f.write(text)
        names = list(VARIANTS)
        for r in range(args.rounds):
            order = names[r % len(names):] + names[:r % len(names)]
            for v in order:
                env = dict(os.environ, LD_PRELOAD=args.shim, SPILLWAY_CONFIG=configs[v], SPILLWAY_DIR=spill,
                           SPILLWAY_THRESHOLD="1MiB", SPILLWAY_POLICY="anon")
                p = subprocess.run([sys.executable, __file__, "--child", v, "--count", str(args.count)],
                                   env=env, stdout=subprocess.PIPE, text=True, timeout=600, check=True)
                for line in p.stdout.splitlines():
                    f = line.split(",")
                    if len(f) == 6 and f[0] == "pycallsite":
                        print(f"{r + 1},{line}", flush=True) if args.csv else None
                        results.setdefault((f[1], f[3]), []).append(float(f[4]))
    print(f"\nPython call-site capture: µs per 1 MiB allocation (anon, never touched), "
          f"median of {args.rounds} interleaved rounds [min-max]; {args.count} allocations per round")
    print(f"{'allocation':44} {'py-on':>18} {'py-off':>18} {'sites-off':>18} {'on - off':>16}")
    labels = {"numpy_us": "np.empty, one site, 12 Python calls deep",
              "torch_us": "torch.empty, one site, 12 Python calls deep",
              "new_line_us": f"np.empty, first from each of {LINES} lines"}
    for m, label in labels.items():
        cells = []
        for v in names:
            s = results.get((v, m), [])
            cells.append(f"{statistics.median(s):7.2f} [{min(s):.1f}-{max(s):.1f}]" if s else "-")
        on, off = results.get(("py-on", m), []), results.get(("py-off", m), [])
        diff = statistics.median([a - b for a, b in zip(on, off)]) if on and off else float("nan")
        print(f"{label:44} {cells[0]:>18} {cells[1]:>18} {cells[2]:>18} {diff:+16.2f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shim")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--spill-dir", default="/var/tmp/spillway-bench")
    ap.add_argument("--csv", action="store_true", help="also print every child's CSV row")
    ap.add_argument("--child")
    args = ap.parse_args()
    if args.child:
        child(args.child, args.count)
    elif not args.shim:
        ap.error("--shim LIB is required")
    else:
        driver(args)


main()
