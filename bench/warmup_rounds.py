#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A run's round time over its course, beside the GPU's clocks (scripts/device_run.sh
PARTS=warmup): whether a run's first rounds are slower, and whether the GPU's clocks were
still rising then.

    warmup_rounds.py TRACE.h5 [CLOCKS.csv END_EPOCH_SECONDS]

TRACE.h5 is a synchronous run with an evaluation every few simulated seconds: between two
evaluations, (wall time) / (gradient steps / nodes) is the mean round time, evaluation
included. CLOCKS.csv is `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw
--format=csv,noheader,nounits -lms 100` run alongside; END_EPOCH_SECONDS (`date +%s.%N`
just after dtsim exited) places the run's start on the clocks' timeline: the run ended
about then, and started its trace's wall_seconds before (the trace's last write, a few
milliseconds, is not counted). Each row then gets the SM clock and power sampled in its
interval.
"""
import datetime
import sys

import h5py


def rows(trace):
    with h5py.File(trace, "r") as f:
        nodes = float(f.attrs["nodes"])
        wall = [float(x) for x in f["metrics/wall_time_s"][:]]
        steps = [float(x) for x in f["metrics/gradient_steps"][:]]
        backend = f.attrs.get("gradient_backend", b"")
        backend = backend.decode() if isinstance(backend, bytes) else str(backend)
        return nodes, float(f.attrs["wall_seconds"]), wall, steps, backend


def clock_samples(path):
    """(epoch seconds, SM MHz, watts) per line of nvidia-smi's CSV (local timestamps)."""
    samples = []
    with open(path) as f:
        for line in f:
            fields = [x.strip() for x in line.split(",")]
            if len(fields) < 3:
                continue
            try:
                when = datetime.datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                samples.append((when, float(fields[1]), float(fields[2])))
            except ValueError:
                continue  # a header or a field nvidia-smi could not read
    return samples


def main(argv):
    if len(argv) not in (2, 4):
        sys.exit(__doc__)
    nodes, wall_seconds, wall, steps, backend = rows(argv[1])
    print(f"gradient backend: {backend}")  # e.g. the kernels loaded before the run
    samples, start = [], None
    if len(argv) == 4:
        samples = clock_samples(argv[2])
        start = float(argv[3]) - wall_seconds
    print(f"{'from s':>8} {'to s':>8} {'rounds':>7} {'ms/round':>9}" +
          (f" {'SM MHz':>7} {'W':>6}" if samples else ""))
    for i in range(1, len(wall)):
        rounds = (steps[i] - steps[i - 1]) / nodes
        if rounds <= 0:
            continue
        line = f"{wall[i - 1]:8.3f} {wall[i]:8.3f} {rounds:7.0f} {1e3 * (wall[i] - wall[i - 1]) / rounds:9.3f}"
        if samples:
            inside = [s for s in samples if start + wall[i - 1] <= s[0] < start + wall[i]]
            if inside:
                line += (f" {sum(s[1] for s in inside) / len(inside):7.0f}"
                         f" {sum(s[2] for s in inside) / len(inside):6.0f}")
            else:
                line += f" {'-':>7} {'-':>6}"
        print(line)
    rounds = steps[-1] / nodes
    print(f"whole run: {rounds:.0f} rounds in {wall_seconds:.3f} s, "
          f"{1e3 * wall_seconds / rounds:.3f} ms/round, {steps[-1] / wall_seconds:.0f} node-steps/s")


if __name__ == "__main__":
    main(sys.argv)
