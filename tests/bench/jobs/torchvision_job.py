"""torchvision_job.py — a torchvision model trained as its users write it:
an in-memory image dataset (N uint8 32x32 RGB images decoded into one
normalised float tensor, CIFAR-style), per-channel statistics over it, then
resnet18 trained for STEPS minibatches from a shuffling DataLoader with
worker processes, then the model evaluated on EVAL batches in order
(jobs.sh runs it; jobphase.py times it).

Usage: torchvision_job.py [IMAGES_K] [STEPS] [WORKERS]   (default 96, 12, 2)
"""
import sys

import numpy as np
import torch
import torchvision
from torch.utils.data import DataLoader, Dataset

from jobphase import phase, result

images = int(float(sys.argv[1]) * 1000) if len(sys.argv) > 1 else 96_000
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 12
workers = int(sys.argv[3]) if len(sys.argv) > 3 else 2
batch = 128
torch.manual_seed(0)


class InMemoryImages(Dataset):
    def __init__(self, tensor, labels, transform=None):
        self.tensor, self.labels, self.transform = tensor, labels, transform

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        x = self.tensor[i]
        if self.transform is not None:
            x = self.transform(x)
        return x, self.labels[i]


with phase("torchvision", "dataset"):
    raw = np.random.default_rng(1).integers(0, 256, (images, 32, 32, 3), dtype=np.uint8)
    labels = torch.from_numpy(raw[:, :4, :4, 0].mean(axis=(1, 2)) > 127.5).long()
    data = torch.from_numpy(raw).permute(0, 3, 1, 2).float().div(255)

with phase("torchvision", "stats"):
    mean = data.mean(dim=(0, 2, 3))
    std = data.std(dim=(0, 2, 3))

with phase("torchvision", "train"):
    transform = torchvision.transforms.Compose([
        torchvision.transforms.RandomHorizontalFlip(),
        torchvision.transforms.Normalize(mean.tolist(), std.tolist()),
    ])
    loader = DataLoader(InMemoryImages(data, labels, transform), batch_size=batch, shuffle=True,
                        num_workers=workers)
    model = torchvision.models.resnet18(num_classes=2)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    for step, (x, y) in enumerate(loader):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step + 1 == steps:
            break
    del loader

with phase("torchvision", "eval"):
    model.eval()
    norm = torchvision.transforms.Normalize(mean.tolist(), std.tolist())
    correct = 0
    with torch.no_grad():
        for start in range(0, 8 * batch, batch):
            x = norm(data[start:start + batch])
            correct += int((model(x).argmax(1) == labels[start:start + batch]).sum())

result("torchvision", f"{mean.sum().item():.6f}/{std.sum().item():.6f}/{correct}")
