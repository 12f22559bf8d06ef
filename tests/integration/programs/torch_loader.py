"""torch_loader.py — scenario 8: a PyTorch DataLoader with two forked
workers (num_workers=2) reading a dataset tensor of DATASET_MIB that lives in
a spill file. Every row i holds i + j/64 in column j, so each batch can be
checked exactly; each worker also writes into the first row of every batch
it served (its copy-on-write view). Prints "batches ok", "parent data unchanged" and the
worker pids; exits 1 on any wrong batch or any change the parent can see.
Usage: torch_loader.py DATASET_MIB"""
import os
import sys

import torch
from torch.utils.data import DataLoader, Dataset

import probe

COLS = 64
BATCH = 4096


class RowBatches(Dataset):
    """Batch b is rows [b*BATCH, (b+1)*BATCH) of the shared dataset."""

    def __init__(self, data):
        self.data = data

    def __len__(self):
        return self.data.shape[0] // BATCH

    def __getitem__(self, b):
        rows = self.data[b * BATCH:(b + 1) * BATCH]
        batch = rows.clone()
        rows[0] += 1000.0  # a worker's write (one page per batch, copy-on-write):
        #                     it must never reach the parent
        return b, os.getpid(), batch


def expected(b):
    base = torch.arange(b * BATCH, (b + 1) * BATCH, dtype=torch.float32).unsqueeze(1)
    return base + torch.arange(COLS, dtype=torch.float32) / COLS


def digest(data):
    return sum(float(data[s:s + 65536].double().sum()) for s in range(0, data.shape[0], 65536))


def main():
    if len(sys.argv) < 2:
        sys.exit("torch_loader.py: usage: torch_loader.py DATASET_MIB; pass the dataset size")
    torch.set_num_threads(1)
    rows = ((int(sys.argv[1]) << 20) // (COLS * 4)) // BATCH * BATCH
    data = torch.empty(rows, COLS)  # the big allocation
    for b in range(rows // BATCH):
        data[b * BATCH:(b + 1) * BATCH] = expected(b)
    print(f"dataset: {rows} rows, {data.numel() * 4 >> 20} MiB, backing={probe.backing(data.data_ptr())}",
          flush=True)
    before = digest(data)

    gen = torch.Generator().manual_seed(7)
    loader = DataLoader(RowBatches(data), batch_size=None, shuffle=True, generator=gen,
                        num_workers=2, multiprocessing_context="fork")
    seen, wrong, workers = set(), 0, set()
    for b, pid, batch in loader:
        workers.add(int(pid))
        seen.add(int(b))
        if not torch.equal(batch, expected(int(b))):
            wrong += 1
    print(f"worker pids: {sorted(workers)} (parent {os.getpid()})", flush=True)
    if wrong or len(seen) != rows // BATCH:
        sys.exit(f"torch_loader.py: {wrong} wrong batches, {len(seen)} of {rows // BATCH} seen; "
                 "the workers did not read the dataset correctly")
    print(f"batches ok: {len(seen)} of {rows // BATCH}", flush=True)
    if os.getpid() in workers or len(workers) != 2:
        sys.exit("torch_loader.py: batches did not come from two forked workers; check num_workers")
    after = digest(data)
    if after != before:
        sys.exit(f"torch_loader.py: parent data changed (digest {before} -> {after}); "
                 "a worker's write reached the parent")
    print(f"parent data unchanged (digest {after})", flush=True)


if __name__ == "__main__":
    main()
