"""torch_shm_loader.py — scenario 11: a PyTorch DataLoader with two forked
workers (num_workers=2) collating BATCH_MIB batches, as an unmodified job
does: each worker's default_collate stacks 1 MiB samples straight into a new
shared-memory segment (/dev/shm/torch_*) of the whole batch size, which
travels to the parent by file descriptor. Sample s holds s*K + j at j (K
int32 elements per sample), so every batch is checked exactly. Prints the
container's /dev/shm size, where each received batch lives (the distinct
/proc/self/maps paths, names with digits blanked), "batches ok: N of N" and
the worker pids. Exits 1 on a wrong, missing or duplicated batch.
Usage: torch_shm_loader.py BATCH_MIB BATCHES"""
import os
import re
import sys

import torch
from torch.utils.data import DataLoader, Dataset

import probe

K = 1 << 18  # int32 elements per sample: 1 MiB


class Counting(Dataset):
    def __init__(self, samples):
        self.samples = samples

    def __len__(self):
        return self.samples

    def __getitem__(self, s):
        return torch.arange(s * K, (s + 1) * K, dtype=torch.int32), os.getpid()


def main():
    if len(sys.argv) < 3:
        sys.exit("torch_shm_loader.py: usage: torch_shm_loader.py BATCH_MIB BATCHES; pass both")
    torch.set_num_threads(1)
    per_batch, batches = int(sys.argv[1]), int(sys.argv[2])
    print(f"/dev/shm size: {probe.devshm_mib()[0]} MiB; {batches} batches of {per_batch} MiB", flush=True)
    loader = DataLoader(Counting(per_batch * batches), batch_size=per_batch, shuffle=False,
                        num_workers=2, multiprocessing_context="fork")
    good, workers, segments = 0, set(), set()
    for b, (batch, pids) in enumerate(loader):
        workers.update(int(p) for p in pids)
        segments.add(re.sub(r"[0-9]+", "N", probe.mapping_of(batch.data_ptr())))
        want = torch.arange(b * per_batch * K, (b + 1) * per_batch * K, dtype=torch.int32).view(per_batch, K)
        if batch.shape == want.shape and torch.equal(batch, want):
            good += 1
        else:
            print(f"batch {b} WRONG (shape {tuple(batch.shape)})", flush=True)
        del batch, want
    print(f"batch segments: {sorted(segments)}", flush=True)
    print(f"worker pids: {sorted(workers)} (parent {os.getpid()})", flush=True)
    if good != batches:
        sys.exit(f"torch_shm_loader.py: {good} of {batches} batches correct; the workers' batches "
                 "did not arrive intact")
    if len(workers) != 2 or os.getpid() in workers:
        sys.exit("torch_shm_loader.py: batches did not come from two forked workers; check num_workers")
    print(f"batches ok: {good} of {batches}", flush=True)


if __name__ == "__main__":
    main()
