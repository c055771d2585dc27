#!/usr/bin/python3
"""PyTorch reference for dtsim's 32-node benchmark: the same work done the usual way.

32 per-node MLPs (784-256-128-10), each step: a batch-32 forward/backward on the node's
Fashion-MNIST shard, SGD with momentum 0.9, then ring gossip averaging (Metropolis 1/3
weights) of the parameters, as in synchronous D-PSGD. Prints node-steps/s so that
dtsim_bench's figure can be compared. Run with Debian's interpreter:

    /usr/bin/python3 bench/torch_reference.py [--threads 2] [--rounds 60]
"""
import argparse
import gzip
import time

import numpy as np
import torch


def load_fmnist(path="/usr/share/datasets/fashion-mnist"):
    with gzip.open(f"{path}/train-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32)
    with gzip.open(f"{path}/train-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    x = (x / 255.0 - 0.2860) / 0.3530
    return torch.from_numpy(x), torch.from_numpy(y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    x, y = load_fmnist()
    n = args.nodes
    shards = torch.randperm(len(y)).chunk(n)
    models = [torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                  torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                  torch.nn.Linear(128, 10)) for _ in range(n)]
    for m in models[1:]:
        m.load_state_dict(models[0].state_dict())
    opts = [torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9) for m in models]
    loss_fn = torch.nn.CrossEntropyLoss()

    def one_round():
        for i, (m, opt) in enumerate(zip(models, opts)):
            idx = shards[i][torch.randint(len(shards[i]), (args.batch,))]
            opt.zero_grad(set_to_none=True)
            loss_fn(m(x[idx]), y[idx]).backward()
            opt.step()
        with torch.no_grad():  # ring gossip: x_i <- (x_{i-1} + x_i + x_{i+1}) / 3
            for params in zip(*(m.parameters() for m in models)):
                stacked = torch.stack([p.data for p in params])
                mixed = (stacked + stacked.roll(1, 0) + stacked.roll(-1, 0)) / 3
                for p, v in zip(params, mixed):
                    p.data.copy_(v)

    for _ in range(3):  # warm-up
        one_round()
    t0 = time.perf_counter()
    for _ in range(args.rounds):
        one_round()
    wall = time.perf_counter() - t0
    steps = args.rounds * n
    print(f"torch {torch.__version__}, {args.threads} threads: {steps} node-steps in {wall:.2f} s "
          f"= {steps / wall:.0f} node-steps/s")


if __name__ == "__main__":
    main()
