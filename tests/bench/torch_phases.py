"""torch_phases.py — the PyTorch job of issue 12, phase by phase: a float
dataset tensor of DATASET_MIB (64 features per row) and its labels are
built (fill), STEPS SGD steps on random minibatches of 512 rows are taken
(steps), then one evaluation pass reads the whole dataset in order (eval).
It is the job of integration scenario 2 (tests/integration/programs/
torch_train.py) with a clock around each phase.

Usage: torch_phases.py DATASET_MIB [--steps N] [--dev loopN] [--label L]
One line per phase on stdout:
  TPHASE label=L phase=P s=.. majflt=.. dev_read_bytes=.. done=1
On SIGTERM (a driver's time limit) the phase in progress prints its line
with done=FRACTION (the share of its work finished) and the job exits 124.
(majflt from getrusage; dev_read_bytes from /sys/block/DEV/stat, -1 without
--dev), then `RESULT {json}` (evaluation loss and weights: identical with and
without the shim, which the driver checks)."""
import argparse
import json
import resource
import signal
import sys
import time

import torch

FEATURES = 64


def dev_read_bytes(dev):
    if not dev:
        return -1
    with open(f"/sys/block/{dev}/stat") as f:
        return int(f.read().split()[2]) * 512


class Phase:
    current = None

    def __init__(self, label, name, dev):
        self.label, self.name, self.dev = label, name, dev
        self.done = 0.0  # the share of the phase's work finished, for a partial line

    def __enter__(self):
        self.flt = resource.getrusage(resource.RUSAGE_SELF).ru_majflt
        self.dev0 = dev_read_bytes(self.dev)
        self.t0 = time.monotonic()
        Phase.current = self
        return self

    def line(self, done):
        s = time.monotonic() - self.t0
        flt = resource.getrusage(resource.RUSAGE_SELF).ru_majflt - self.flt
        dev = dev_read_bytes(self.dev)
        read = dev - self.dev0 if self.dev0 >= 0 else -1
        print(f"TPHASE label={self.label} phase={self.name} s={s:.3f} majflt={flt} "
              f"dev_read_bytes={read} done={done:.4f}", flush=True)

    def __exit__(self, *exc):
        Phase.current = None
        if exc[0] is None:
            self.line(1.0)


def on_term(signum, frame):
    if Phase.current is not None:
        Phase.current.line(Phase.current.done)
    sys.exit(124)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dataset_mib", type=int)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--dev", default="")
    ap.add_argument("--label", default="run")
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, on_term)
    torch.set_num_threads(1)  # bit-identical arithmetic across runs
    gen = torch.Generator().manual_seed(1234)
    rows = (a.dataset_mib << 20) // (FEATURES * 4)
    chunk = 1 << 16
    with Phase(a.label, "fill", a.dev):
        true_w = torch.randn(FEATURES, 1, generator=gen)
        x = torch.randn(rows, FEATURES, generator=gen)  # the big allocation
        y = torch.empty(rows, 1)
        for start in range(0, rows, chunk):
            torch.matmul(x[start:start + chunk], true_w, out=y[start:start + chunk])

    model = torch.nn.Linear(FEATURES, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with Phase(a.label, "steps", a.dev) as ph:
        for step in range(a.steps):
            ph.done = step / a.steps
            idx = torch.randint(0, rows, (512,), generator=gen)
            loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()

    total = 0.0
    with Phase(a.label, "eval", a.dev) as ph, torch.no_grad():
        for start in range(0, rows, chunk):
            ph.done = start / rows
            pred = model(x[start:start + chunk])
            total += torch.nn.functional.mse_loss(pred, y[start:start + chunk], reduction="sum").item()
    result = {"eval_mse": total / rows, "weight": model.weight.flatten().tolist()[:8],
              "bias": model.bias.item(), "rows": rows}
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
