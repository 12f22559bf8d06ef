# python_sites.py — a PyTorch job with two 128 MiB tensors made by the same
# native operator (torch.empty) on different Python lines: a dataset filled
# front to back, and a scatter buffer written at random. Prints where each
# landed (spillway_backing) so python_sites.sh can check Python rules and
# learning across runs.
import ctypes
import sys
import time

import torch

N = 32 << 20  # float32 elements: 128 MiB


def load_dataset():
    t = torch.empty(N)
    t.fill_(1.0)
    return t


def make_scatter_buffer(writes):
    t = torch.empty(N)  # the scatter site
    g = torch.Generator().manual_seed(42)
    t[torch.randint(0, N, (writes,), generator=g)] = 1.0
    return t


def main():
    writes = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    backing = ctypes.CDLL(None).spillway_backing
    backing.argtypes = [ctypes.c_void_p]
    dataset = load_dataset()
    scatter = make_scatter_buffer(writes)
    print(f"dataset={backing(dataset.data_ptr())} scatter={backing(scatter.data_ptr())}", flush=True)
    time.sleep(0.6)  # a few sampler ticks: the learner classifies the scatter site
    assert float(dataset[12345]) == 1.0


main()
