"""torch_mp.py — scenario 13: torch.multiprocessing with sharing strategy
STRATEGY (file_descriptor or file_system) passes a SIZE_MIB int32 tensor
(element i holds i) both ways between processes started with "spawn", so
every tensor crosses through the strategy's own pickling, not through fork:
parent -> child as a Process argument (the child checks it and adds 1 to
every element; the parent must see those writes), and child -> parent
through a Queue (a tensor the child creates, holding 3*i; the parent checks
it while the child is still alive, then lets the child exit). Prints where
each segment lives (/proc/self/maps) and "strategy STRATEGY: both ways ok".
Exits 1 on any wrong value.
Usage: torch_mp.py STRATEGY SIZE_MIB"""
import sys

import torch
import torch.multiprocessing as mp

import probe


def total(n, scale=1, offset=0):
    """Exact sum of scale*i + offset for i in [0, n)."""
    return scale * n * (n - 1) // 2 + offset * n


def tensor_sum(t, chunk=1 << 22):
    """Exact int64 sum, in chunks: sum(dtype=int64) of the whole tensor would
    first make an int64 copy twice its size and distort the peak usage."""
    return sum(int(t[s:s + chunk].sum(dtype=torch.int64)) for s in range(0, t.numel(), chunk))


def child(strategy, t, n, back, done):
    mp.set_sharing_strategy(strategy)
    torch.set_num_threads(1)
    seen = tensor_sum(t)
    segment = probe.mapping_of(t.data_ptr())
    t.add_(1)
    u = torch.arange(n, dtype=torch.int32).mul_(3)
    back.put((seen, segment, u))
    done.wait(300)  # keep u alive until the parent has checked it


def main():
    if len(sys.argv) < 3:
        sys.exit("torch_mp.py: usage: torch_mp.py file_descriptor|file_system SIZE_MIB; pass both")
    strategy = sys.argv[1]
    mp.set_sharing_strategy(strategy)
    torch.set_num_threads(1)
    n = (int(sys.argv[2]) << 20) // 4
    print(f"/dev/shm size: {probe.devshm_mib()[0]} MiB; strategy {mp.get_sharing_strategy()}", flush=True)

    ctx = mp.get_context("spawn")
    back, done = ctx.Queue(), ctx.Event()
    t = torch.arange(n, dtype=torch.int32)
    p = ctx.Process(target=child, args=(strategy, t, n, back, done))
    p.start()  # pickling t moves it into a shared segment
    print(f"parent -> child segment (parent side): {probe.mapping_of(t.data_ptr())}", flush=True)
    seen, child_segment, u = back.get(timeout=300)
    print(f"parent -> child segment (child side): {child_segment}", flush=True)
    print(f"child -> parent segment (parent side): {probe.mapping_of(u.data_ptr())}", flush=True)
    got_u = tensor_sum(u)
    done.set()
    p.join(300)
    if seen != total(n):
        sys.exit(f"torch_mp.py: {strategy}: the child saw sum {seen}, expected {total(n)}; "
                 "parent -> child sharing is broken")
    if got_u != total(n, 3):
        sys.exit(f"torch_mp.py: {strategy}: the tensor from the child sums to {got_u}, expected "
                 f"{total(n, 3)}; child -> parent sharing is broken")
    if p.exitcode != 0:
        sys.exit(f"torch_mp.py: {strategy}: the child exited {p.exitcode}; see its traceback above")
    got_t = tensor_sum(t)
    if got_t != total(n, 1, 1):
        sys.exit(f"torch_mp.py: {strategy}: after the child's writes the parent sums {got_t}, expected "
                 f"{total(n, 1, 1)}; the child's writes did not reach the parent")
    print(f"child saw the data, its writes reached the parent, its tensor arrived intact", flush=True)
    print(f"strategy {strategy}: both ways ok ({n * 4 >> 20} MiB each way)", flush=True)


if __name__ == "__main__":
    main()
