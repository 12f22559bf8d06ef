"""torch_share.py — scenarios 10 and 12: tensor.share_memory_() of an int32
tensor of SIZE_MIB (element i holds i, so every check is exact), as an
unmodified job does it. PyTorch copies the tensor into a fresh
/dev/shm/torch_* segment (file-descriptor strategy), so for a moment it
exists twice. Prints the container's /dev/shm size, where the tensor and
then the shared segment live (/proc/self/maps), /dev/shm use while shared,
the cgroup's memory split after the copy, "copy ok" when the shared tensor
holds exactly what it held before; with --child, a forked
torch.multiprocessing child checks the data, adds 1 to every element, and
the parent must see every one of those writes ("child writes seen by
parent"). Exits 1 on any wrong value.
Usage: torch_share.py SIZE_MIB [--child]"""
import sys

import torch
import torch.multiprocessing as mp

import probe


def total(n, offset=0):
    """Exact sum of i + offset for i in [0, n)."""
    return n * (n - 1) // 2 + offset * n


def tensor_sum(t, chunk=1 << 22):
    """Exact int64 sum, in chunks: sum(dtype=int64) of the whole tensor would
    first make an int64 copy twice its size and distort the peak usage."""
    return sum(int(t[s:s + chunk].sum(dtype=torch.int64)) for s in range(0, t.numel(), chunk))


def child(t, n, queue):
    seen = tensor_sum(t)
    t.add_(1)  # every page of the shared segment
    queue.put((seen == total(n), seen))


def main():
    if len(sys.argv) < 2:
        sys.exit("torch_share.py: usage: torch_share.py SIZE_MIB [--child]; pass the tensor size")
    torch.set_num_threads(1)
    n = (int(sys.argv[1]) << 20) // 4
    size, _ = probe.devshm_mib()
    print(f"/dev/shm size: {size} MiB", flush=True)
    t = torch.arange(n, dtype=torch.int32)
    print(f"tensor: {n * 4 >> 20} MiB, backing={probe.backing(t.data_ptr())}", flush=True)

    t.share_memory_()  # the copy into /dev/shm (or, with the shim, into a spill file)
    _, used = probe.devshm_mib()
    print(f"shared: is_shared={t.is_shared()} segment={probe.mapping_of(t.data_ptr())}", flush=True)
    print(f"/dev/shm used while shared: {used} MiB", flush=True)
    stat = probe.cgroup_stat()
    split = " ".join(f"{k}={stat[k] >> 20 if k in stat else '?'} MiB" for k in ("anon", "shmem", "file"))
    print(f"cgroup after the copy: usage={probe.cgroup_usage() >> 20} MiB {split}", flush=True)
    got = tensor_sum(t)
    if got != total(n):
        sys.exit(f"torch_share.py: the shared tensor sums to {got}, expected {total(n)}; "
                 "share_memory_() did not copy the data intact")
    print(f"copy ok: sum {got} over {n} elements", flush=True)

    if "--child" in sys.argv[2:]:
        ctx = mp.get_context("fork")
        queue = ctx.Queue()
        p = ctx.Process(target=child, args=(t, n, queue))
        p.start()
        ok, seen = queue.get(timeout=300)
        p.join(300)
        if p.exitcode != 0 or not ok:
            sys.exit(f"torch_share.py: the child (exit {p.exitcode}) saw sum {seen}, expected {total(n)}; "
                     "the child does not see the shared data")
        print(f"child {p.pid} saw the data (sum {seen})", flush=True)
        got = tensor_sum(t)
        if got != total(n, 1):
            sys.exit(f"torch_share.py: after the child's writes the parent sums {got}, expected "
                     f"{total(n, 1)}; the segment is not shared between the processes")
        print("child writes seen by parent: every element +1", flush=True)


if __name__ == "__main__":
    main()
