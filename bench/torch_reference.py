#!/usr/bin/python3
"""PyTorch reference for dtsim's 32-node benchmark, written the fast way.

The same work as `bench/dpsgd32.yaml`: 32 nodes, each an MLP 784-256-128-10 on its own
Fashion-MNIST shard, synchronous D-PSGD on a ring: per round every node takes a batch-32
step of SGD with momentum 0.9 (lr 0.05), then the models are averaged with their ring
neighbours (Metropolis weights 1/3). Written as a PyTorch user who cares about speed would:

- every node's parameters are one row of a preallocated [N, P] tensor, each layer's weights
  a view of that row (leaf tensors, so autograd writes each node's gradient into a fresh
  tensor, which is copied into the node's row of an [N, P] gradient tensor);
- momentum, the SGD step and the ring mixing are whole-tensor in-place operations on
  [N, P] (no per-node optimizer objects, no module state copied through lists).

A batched form (torch.bmm over the nodes) was tried and is slower here (243 against about
1,200 node-steps/s for the gradients alone, one thread): Debian's torch runs batched matmul
outside BLAS; per-node matmuls use OpenBLAS (install libopenblas0-pthread, which the
alternatives system then prefers over the reference BLAS).

Prints node-steps/s of the timed rounds; `bench/compare_torch.sh` times the whole process
against dtsim's. Run with Debian's interpreter and its python3-torch:

    /usr/bin/python3 bench/torch_reference.py [--threads 1] [--rounds 300]
"""
import argparse
import gzip
import os
import sys
import time

import numpy as np

# OpenBLAS starts its own threads when it is loaded (with torch); on a machine where other
# work runs, more of them than --threads spin against it and slow the loop by 10-50x.
if "OPENBLAS_NUM_THREADS" not in os.environ:
    threads = sys.argv[sys.argv.index("--threads") + 1] if "--threads" in sys.argv else "1"
    os.environ["OPENBLAS_NUM_THREADS"] = threads
import torch  # noqa: E402  (after OPENBLAS_NUM_THREADS)

SIZES = [784, 256, 128, 10]


def load_fmnist(path="/usr/share/datasets/fashion-mnist"):
    with gzip.open(f"{path}/train-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float32)
    with gzip.open(f"{path}/train-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return torch.from_numpy(x / 255.0), torch.from_numpy(y)


def node_layers(row, grad_row):
    """Per layer (weight [out, in], bias [out], their rows in the gradient tensor) as views
    of one node's parameter row; the weights are leaves that require grad."""
    layers, offset = [], 0
    for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
        span = fan_in * fan_out
        w = row[offset:offset + span].view(fan_out, fan_in)
        gw = grad_row[offset:offset + span].view(fan_out, fan_in)
        offset += span
        b = row[offset:offset + fan_out]
        gb = grad_row[offset:offset + fan_out]
        offset += fan_out
        layers.append((w.requires_grad_(True), b.requires_grad_(True), gw, gb))
    return layers


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=32)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=300)
    ap.add_argument("--batch", type=int, default=32)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    x, y = load_fmnist()
    n, batch = args.nodes, args.batch
    shards = torch.randperm(len(y)).chunk(n)
    shard_len = torch.tensor([len(s) for s in shards])
    shard_mat = torch.stack([s[: int(shard_len.min())] for s in shards])  # [N, S]

    num_params = sum((i + 1) * o for i, o in zip(SIZES[:-1], SIZES[1:]))
    params = torch.empty(n, num_params)
    grads = torch.zeros(n, num_params)
    momentum = torch.zeros(n, num_params)
    mixed = torch.empty(n, num_params)
    with torch.no_grad():  # one initial model, copied to every node
        offset = 0
        for fan_in, fan_out in zip(SIZES[:-1], SIZES[1:]):
            bound = 1.0 / np.sqrt(fan_in)
            params[0, offset:offset + (fan_in + 1) * fan_out].uniform_(-bound, bound)
            offset += (fan_in + 1) * fan_out
        params[1:] = params[0]
    nodes = [node_layers(params[i], grads[i]) for i in range(n)]
    lr, beta = 0.05, 0.9
    loss_fn = torch.nn.functional.cross_entropy

    def one_round():
        idx = torch.randint(shard_mat.shape[1], (n, batch))
        rows = torch.gather(shard_mat, 1, idx)  # [N, B] example ids
        for i, layers in enumerate(nodes):
            h = x[rows[i]]
            for k, (w, b, _, _) in enumerate(layers):
                h = torch.addmm(b, h, w.t())
                if k + 1 < len(layers):
                    h = torch.relu(h)
            for w, b, _, _ in layers:
                w.grad = b.grad = None
            loss_fn(h, y[rows[i]]).backward()
            for w, b, gw, gb in layers:
                gw.copy_(w.grad)
                gb.copy_(b.grad)
        with torch.no_grad():
            momentum.mul_(beta).add_(grads)
            params.sub_(momentum, alpha=lr)
            # Ring gossip without allocating: x_i <- (x_{i-1} + x_i + x_{i+1}) / 3.
            mixed.copy_(params)
            mixed[1:].add_(params[:-1])
            mixed[0].add_(params[-1])
            mixed[:-1].add_(params[1:])
            mixed[-1].add_(params[0])
            params.copy_(mixed.div_(3))

    for _ in range(3):  # warm-up
        one_round()
    t0 = time.perf_counter()
    for _ in range(args.rounds):
        one_round()
    wall = time.perf_counter() - t0
    steps = args.rounds * n
    print(f"torch {torch.__version__}, {args.threads} thread(s): {steps} node-steps in "
          f"{wall:.2f} s = {steps / wall:.0f} node-steps/s")


if __name__ == "__main__":
    main()
