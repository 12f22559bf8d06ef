"""epochs_job.py — a PyTorch training loop whose parent process updates a
large buffer in place while the DataLoader's worker processes live, as a
recommendation model's embedding table is trained: an in-memory dataset of
row indices, a DataLoader that forks its workers at the start of every
epoch (persistent_workers=False, the default), and per step a gather of the
batch's rows, a loss, and an in-place scatter of their gradient into the
table (jobs.sh runs it; jobphase.py times it).

What it shows: the table is alive at each fork, so under the shim's fork
snapshot (docs/design.md, "Fork snapshots") every page of it the parent
writes during an epoch is a private copy, anonymous memory, until the
epoch's workers exit; with `[fork] snapshot = false` it stays in its spill
file (the workers never read the table, so they need no snapshot of it).

Usage: epochs_job.py [TABLE_MIB] [EPOCHS] [STEPS] [WORKERS]   (default 768, 3, 150, 2)
"""
import sys

import torch
from torch.utils.data import DataLoader, Dataset

from jobphase import phase, result

table_mib = int(sys.argv[1]) if len(sys.argv) > 1 else 768
epochs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 150
workers = int(sys.argv[4]) if len(sys.argv) > 4 else 2
dim, batch = 64, 8192
rows = (table_mib << 20) // (dim * 4)
samples = 24 * 1000 * 1000
torch.manual_seed(0)


class Indices(Dataset):
    """One sample: a row index and its target, sliced from two tensors."""

    def __init__(self, index, target):
        self.index, self.target = index, target

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        return self.index[i], self.target[i]


with phase("epochs", "dataset"):
    gen = torch.Generator().manual_seed(1)
    index = torch.randint(0, rows, (samples,), generator=gen)
    target = torch.rand(samples, generator=gen)

with phase("epochs", "table"):
    table = torch.randn(rows, dim, generator=gen).mul_(0.01)

losses = []
for epoch in range(epochs):
    with phase("epochs", f"epoch{epoch + 1}"):
        loader = DataLoader(Indices(index, target), batch_size=batch, shuffle=True, num_workers=workers,
                            generator=torch.Generator().manual_seed(epoch))
        total = 0.0
        for step, (idx, y) in enumerate(loader):
            emb = table[idx]
            pred = emb.sum(dim=1)
            err = pred - y
            total += float((err * err).mean())
            grad = (2.0 / batch) * err.unsqueeze(1).expand(-1, dim)
            table.index_add_(0, idx, grad, alpha=-0.05)
            if step + 1 == steps:
                break
        del loader  # its workers exit here
        losses.append(total / steps)

with phase("epochs", "checksum"):
    checksum = float(table.sum())

result("epochs", "/".join(f"{l:.6f}" for l in losses) + f"/{checksum:.4f}")
