#!/usr/bin/python3
"""PyTorch reference for dtsim_bench's LeNet step: the same network and step on one core.

LeNet-5 as dtsim's `model: {kind: lenet}` on 1x28x28 input: conv 5x5 6 (padding 2), ReLU,
max pool 2, conv 5x5 16, ReLU, max pool 2, dense 120-84-10 with ReLU, softmax cross-entropy.
One step = zero_grad, forward, backward, plain SGD update, on one random batch (features
U(-1, 1), labels 0 or 1), as dtsim_bench times it. torch uses one thread, so the figures
compare per core. Prints the median and best step time per batch size and the GFLOP/s with
dtsim's flop count (multiply-adds of forward, weight and input gradients; 2.26 MFLOP per
example). Run with Debian's interpreter:

    /usr/bin/python3 bench/torch_lenet.py [--seconds 2] [--batches 32 128]
"""
import argparse
import os
import time

# One core: thread_time() would not see work that OpenBLAS or OpenMP hands to other threads.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")
import torch  # noqa: E402  (after the thread settings)

FLOPS_PER_EXAMPLE = 2.0 * (2 * 28 * 28 * 6 * 25 + 3 * 10 * 10 * 16 * 150
                           + 3 * (400 * 120 + 120 * 84 + 84 * 10))


def lenet():
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 6, 5, padding=2), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(6, 16, 5), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(400, 120), torch.nn.ReLU(),
        torch.nn.Linear(120, 84), torch.nn.ReLU(),
        torch.nn.Linear(84, 10))


def bench(batch, seconds):
    torch.manual_seed(1)
    model = lenet()
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    loss_fn = torch.nn.CrossEntropyLoss()
    x = torch.rand(batch, 1, 28, 28) * 2 - 1
    y = torch.randint(2, (batch,))

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    for _ in range(5):
        step()
    times, walls = [], []
    while sum(times) < seconds or len(times) < 20:
        t0, w0 = time.thread_time(), time.perf_counter()  # CPU time, as dtsim_bench measures
        step()
        times.append(time.thread_time() - t0)
        walls.append(time.perf_counter() - w0)
    times.sort()
    walls.sort()
    return times[len(times) // 2], times[0], walls[len(walls) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--batches", type=int, nargs="+", default=[32, 128])
    args = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, mkldnn available: "
          f"{torch.backends.mkldnn.is_available()}")
    for batch in args.batches:
        median, best, wall = bench(batch, args.seconds)
        flops = FLOPS_PER_EXAMPLE * batch
        print(f"LeNet SGD step, batch {batch:3d}: median {1e3 * median:.3f} ms/step "
              f"({flops / median / 1e9:.1f} GFLOP/s), best {1e3 * best:.3f} ms "
              f"({flops / best / 1e9:.1f} GFLOP/s); median wall {1e3 * wall:.3f} ms")


if __name__ == "__main__":
    main()
