"""torch_ddp.py — scenario 15: a two-rank DistributedDataParallel job (CPU,
gloo) in one memory-limited container. Each rank holds its own synthetic
dataset shard of SHARD_MIB (together larger than the limit), takes STEPS
SGD steps on random minibatches (DDP allreduces the gradients), then makes
one evaluation pass; rank 0 prints `RESULT {json}` with the allreduced
evaluation loss and the weights, which every rank must hold identically.

Debian's torchrun (torch 1.13, Python 3.11) fails in its elastic agent, so
`launch` starts the ranks the way torchrun does: env:// rendezvous on
loopback with MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE and LOCAL_RANK. If
a rank dies (an OOM kill), the launcher stops the others (they would wait
in allreduce forever) and exits with that rank's status (128+N for signal N).
Usage: torch_ddp.py launch WORLD SHARD_MIB STEPS"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

FEATURES = 64


def launch(world, shard_mib, steps):
    with socket.socket() as s:  # a free port on loopback for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ranks = []
    for rank in range(world):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(world), LOCAL_RANK=str(rank))
        ranks.append(subprocess.Popen([sys.executable, __file__, "rank", str(shard_mib), str(steps)], env=env))
    status = 0
    while any(p.poll() is None for p in ranks):
        failed = [p for p in ranks if p.returncode not in (None, 0)]
        if failed:
            for p in ranks:
                if p.poll() is None:
                    p.send_signal(signal.SIGKILL)
            break
        time.sleep(0.2)
    for p in ranks:
        rc = p.wait()
        if rc != 0 and status == 0:
            status = 128 - rc if rc < 0 else rc
            print(f"launcher: rank {ranks.index(p)} ended with status {status}", file=sys.stderr, flush=True)
    sys.exit(status)


def rank_main(shard_mib, steps):
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)  # bit-identical arithmetic across runs
    dist.init_process_group("gloo", init_method="env://")
    true_w = torch.randn(FEATURES, 1, generator=torch.Generator().manual_seed(99))
    gen = torch.Generator().manual_seed(1234 + rank)  # each rank its own shard and minibatches
    rows = (shard_mib << 20) // (FEATURES * 4)
    x = torch.randn(rows, FEATURES, generator=gen)  # the big allocation
    print(f"rank {rank}: shard of {rows} rows x {FEATURES} float32 = {x.numel() * 4 >> 20} MiB", flush=True)
    y = torch.empty(rows, 1)
    for start in range(0, rows, 1 << 16):  # labels in chunks: no 2nd full-size temporary
        torch.matmul(x[start:start + (1 << 16)], true_w, out=y[start:start + (1 << 16)])

    model = torch.nn.Linear(FEATURES, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for step in range(steps):
        idx = torch.randint(0, rows, (512,), generator=gen)
        loss = torch.nn.functional.mse_loss(ddp(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()  # DDP allreduces the gradients here
        opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.6f}", flush=True)

    total = 0.0
    with torch.no_grad():
        for start in range(0, rows, 1 << 16):
            pred = model(x[start:start + (1 << 16)])
            total += torch.nn.functional.mse_loss(pred, y[start:start + (1 << 16)], reduction="sum").item()
    sums = torch.tensor([total, float(rows)], dtype=torch.float64)
    dist.all_reduce(sums)
    params = torch.cat([model.weight.detach().flatten(), model.bias.detach()]).double()
    lo, hi = params.clone(), params.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    if rank == 0:
        result = {"eval_mse": sums[0].item() / sums[1].item(), "weight": model.weight.flatten().tolist()[:8],
                  "bias": model.bias.item(), "rows": int(sums[1].item()), "world": world,
                  "ranks_agree": bool(torch.equal(lo, hi))}
        print("RESULT " + json.dumps(result, sort_keys=True), flush=True)
    dist.destroy_process_group()


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "launch":
        launch(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    elif len(sys.argv) == 4 and sys.argv[1] == "rank":
        rank_main(int(sys.argv[2]), int(sys.argv[3]))
    else:
        sys.exit("torch_ddp.py: usage: torch_ddp.py launch WORLD SHARD_MIB STEPS")


if __name__ == "__main__":
    main()
