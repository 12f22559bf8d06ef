"""torch_train.py — scenario 2: an unmodified PyTorch training job whose
dataset tensor is larger than the container's memory limit. It builds a
synthetic regression dataset of DATASET_MIB, takes STEPS SGD steps on random
minibatches, then makes one evaluation pass over the whole dataset, and prints
one line `RESULT {json}` with the evaluation loss and the learned weights.
Without the shim it must be OOM-killed; with it it must finish and print the
same RESULT as an unconstrained run (the suite compares them).
Usage: torch_train.py DATASET_MIB [STEPS]"""
import json
import sys

import torch

FEATURES = 64


def main():
    if len(sys.argv) < 2:
        sys.exit("torch_train.py: usage: torch_train.py DATASET_MIB [STEPS]; pass the dataset size")
    dataset_mib = int(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    torch.set_num_threads(1)  # bit-identical arithmetic across runs
    gen = torch.Generator().manual_seed(1234)
    rows = (dataset_mib << 20) // (FEATURES * 4)
    true_w = torch.randn(FEATURES, 1, generator=gen)
    x = torch.randn(rows, FEATURES, generator=gen)  # the big allocation
    print(f"dataset: {rows} rows x {FEATURES} float32 = {x.numel() * 4 >> 20} MiB", flush=True)
    y = torch.empty(rows, 1)
    for start in range(0, rows, 1 << 16):  # labels in chunks: no 2nd full-size temporary
        torch.matmul(x[start:start + (1 << 16)], true_w, out=y[start:start + (1 << 16)])

    model = torch.nn.Linear(FEATURES, 1)
    with torch.no_grad():
        model.weight.zero_()
        model.bias.zero_()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(steps):
        idx = torch.randint(0, rows, (512,), generator=gen)
        loss = torch.nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.6f}", flush=True)

    total = 0.0
    with torch.no_grad():
        for start in range(0, rows, 1 << 16):
            pred = model(x[start:start + (1 << 16)])
            total += torch.nn.functional.mse_loss(pred, y[start:start + (1 << 16)],
                                                  reduction="sum").item()
    result = {"eval_mse": total / rows, "weight": model.weight.flatten().tolist()[:8],
              "bias": model.bias.item(), "rows": rows}
    print("RESULT " + json.dumps(result, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
