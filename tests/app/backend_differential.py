#!/usr/bin/python3
"""Differential test of the CPU gradient backends: random small scenarios (every built-in
algorithm with random keys, compressors, topologies, compute and network models, failures,
schedules, models) run with model.backend cpu-batched and cpu-resident, and every third one
with cpu too; their traces must agree bit for bit in every /metrics, /nodes and /staleness
dataset (wall times aside) and in the run's summary attributes, and every cpu-resident run
must keep its vectors in the backend (every built-in algorithm attaches). cpu-resident is
the host reference of cuda-resident, so this covers the resident logic the device mirrors.

With --backends A,B,... the first is the reference of the others, every scenario runs on
each; with --close (a device backend against cpu-resident: rounding, and the device's own
random draws in stochastic compressors, move the bits) a run agrees when it ends alike and
its final test loss is within that relative difference and its final accuracy within
--points accuracy points.

With --scenario FILE (and --set KEY=VALUE, repeated) that one scenario runs instead of
random ones: a method added at run time, in a program built on dtsim (the extension test).
With --against OTHER_DTSIM each scenario runs on one backend in turn with both binaries and
OTHER_DTSIM's trace is the reference: a change that should leave results alone, bit for bit.

Usage: backend_differential.py DTSIM [--seed S] [--count N] [--keep DIR]
                                     [--backends A,B,...] [--close REL] [--points P]
                                     [--scenario FILE [--set KEY=VALUE ...]]
                                     [--against OTHER_DTSIM]
A failing scenario's YAML is kept (in --keep, else a temporary folder that is then not
removed) with the command that reproduces it. Exit 0 when all agree, 1 otherwise."""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SYNC_GOSSIP = ["dsgd", "dsgdm", "dsgdm-n", "qg-dsgdm", "qg-dsgdm-n", "d2", "gradient-tracking",
               "momentum-tracking", "decentlam", "choco-sgd"]
ASYNC_GOSSIP = ["dsgd", "dsgdm", "dsgdm-n", "qg-dsgdm", "qg-dsgdm-n"]
PAIRWISE = ["ad-psgd", "swarm-sgd"]
SERVER = ["asgd", "ssgd", "dc-asgd", "gsgm"]
FIXED_TOPOLOGIES = ["ring", "complete", "exponential", "star", "torus", "erdos_renyi",
                    "hypercube"]
TIME_VARYING = ["one_peer_exponential", "random_pairs"]
SUMMARY = ("status", "final_test_accuracy", "final_test_loss", "updates", "gradient_steps",
           "sim_time_s", "bytes_sent")


def compressor(r, method):
    kinds = ["none", "fp16", "qsgd", "qsgd", "topk", "randomk", "sign"]
    if method == "swarm-sgd":
        kinds.append("lattice")  # CHOCO-SGD sends differences, which it cannot decode
    kind = r.choice(kinds)
    c = {"kind": kind}
    if kind == "qsgd":
        c["bits"] = r.choice([1, 2, 4, 8])
        c["bucket"] = r.choice([0, 5, 8, 16, 64, 512])
        if r.random() < 0.5:
            c["form"] = r.choice(["unbiased", "contractive"])
    elif kind in ("topk", "randomk"):
        c["ratio"] = r.choice([0.01, 0.1, 0.5, 1.0])
        if kind == "randomk" and r.random() < 0.5:
            c["form"] = r.choice(["unbiased", "contractive"])
    elif kind == "lattice":
        c["bits"] = r.choice([4, 8, 12])
        c["side"] = r.choice([1e-4, 1e-3])
        c["rounding"] = r.choice(["nearest", "stochastic"])
    if method == "swarm-sgd" and kind != "none" and r.random() < 0.3:
        c["error_feedback"] = True
    return c


def algorithm(r):
    family = r.choice(["sync"] * 5 + ["async"] * 2 + ["pairwise"] * 3 + ["server"] * 3)
    name = r.choice({"sync": SYNC_GOSSIP, "async": ASYNC_GOSSIP, "pairwise": PAIRWISE,
                     "server": SERVER}[family])
    a = {"name": name, "lr": r.choice([0.01, 0.05, 0.1])}
    if name != "gsgm" and r.random() < 0.3:
        a["weight_decay"] = r.choice([1e-4, 1e-3])
    if name in ASYNC_GOSSIP:
        a["mode"] = "async" if family == "async" else "sync"
    if name in ("dsgd", "gradient-tracking") and r.random() < 0.5:
        a["momentum"] = r.choice([0.5, 0.9])
        a["nesterov"] = r.random() < 0.3
    if name in ("dsgd", "dsgdm", "dsgdm-n", "choco-sgd") and r.random() < 0.4:
        a["order"] = r.choice(["adapt_then_combine", "combine_then_adapt"])
    if name.startswith("qg-"):
        a["mu"] = r.choice([0.5, 0.9])
        if r.random() < 0.4:
            a["refresh_period"] = r.choice([2, 3])
    if name in ("ad-psgd", "swarm-sgd", "choco-sgd", "asgd", "ssgd", "dc-asgd") and \
            r.random() < 0.35:
        a["momentum"] = 0.9
    if name == "swarm-sgd":
        a["local_steps"] = r.choice([1, 2, 3])
        if r.random() < 0.3:
            a["local_steps_dist"] = "geometric"
        if r.random() < 0.2:
            a["blocking"] = True
        if r.random() < 0.8:
            a["compressor"] = compressor(r, name)
    if name == "choco-sgd":
        a["gamma"] = r.choice([0.2, 0.5, 1.0])
        a["compressor"] = compressor(r, name)
    if name == "dc-asgd" and r.random() < 0.5:
        a["variant"] = "adaptive"
    if name == "gsgm":
        if r.random() < 0.5:
            a["base"] = "dc-asgd"
        if r.random() < 0.3:
            a["global_momentum"] = False
        if r.random() < 0.3:
            a["slack"] = 2
        if r.random() < 0.3:
            a["average_by"] = "last"
            a["last"] = 1
        elif r.random() < 0.3:
            a["window"] = r.choice([0, 2])
    if name in SERVER and r.random() < 0.3:
        a["server"] = {"update_s": 0.01}
    if name == "ad-psgd" and r.random() < 0.3:
        a["split"] = "none"
    if r.random() < 0.25:
        a["lr_schedule"] = {"warmup_epochs": 0.01, "warmup_from": 0.001, "decay_at": [0.5],
                            "decay_factor": 0.5}
        if r.random() < 0.3:
            a["lr_schedule"]["scale_with_nodes"] = {"base_batch": 64}
    return a


def topology(r, n, a):
    kinds = list(FIXED_TOPOLOGIES)
    if a.get("mode") == "sync" and a["name"] not in ("d2", "decentlam", "choco-sgd"):
        kinds += TIME_VARYING  # the synchronous methods that take a changing W
    kind = r.choice(kinds)
    if kind == "hypercube" and n not in (2, 4, 8, 16):
        kind = "ring"
    if kind == "torus" and n not in (9, 12, 16, 25):
        kind = "ring"
    if kind == "erdos_renyi" and n < 5:
        kind = "complete"
    if a["name"] == "d2" and not (kind == "ring" and n % 2 == 1):
        kind = "complete" if n > 2 else "ring"  # lambda_min(W) > -1/3
    t = {"kind": kind}
    if kind == "erdos_renyi":
        t["p"] = 0.8
    return t


def scenario(r):
    n = r.choice([2, 3, 4, 5, 6, 8, 9, 12, 16, 25])
    a = algorithm(r)
    compute = r.choice([{"dist": "constant", "mean_s": 0.05},
                        {"dist": "lognormal", "mean_s": 0.05, "sigma": 0.5},
                        {"dist": "exponential", "mean_s": 0.05},
                        {"dist": "gamma", "mean_s": 0.05, "shape": 2},
                        {"dist": "normal", "mean_s": 0.05}])
    if r.random() < 0.2:
        compute["speed_range"] = [1, 3]
    if r.random() < 0.3:
        compute["stragglers"] = {"fraction": 0.3, "slowdown": 4,
                                 "mode": r.choice(["permanent", "transient"])}
    if r.random() < 0.2:
        compute["failures"] = [{"node": 1, "from_s": 0.1, "to_s": 0.4}]
    s = {
        "name": "differential",
        "seed": r.randrange(1, 1000),
        "nodes": n,
        "data": {"dataset": "fashion-mnist", "batch_size": r.choice([4, 16]),
                 "partition": r.choice([{"kind": "iid"},
                                        {"kind": "dirichlet", "alpha": 0.3, "min_size": 20},
                                        {"kind": "shards"},
                                        {"kind": "classes_per_node", "classes_per_node": 2}]),
                 "train_samples": 3000, "test_samples": 300,
                 "order": {"kind": r.choice(["random", "fixed"])}},
        "model": r.choice([{"kind": "softmax"}, {"kind": "mlp", "hidden": [24]},
                           {"kind": "mlp", "hidden": [16, 8]}, {"kind": "lenet"}]),
        "topology": topology(r, n, a),
        "algorithm": a,
        "system": {"compute": compute,
                   "network": {"latency_s": r.choice([0.0, 0.001, 0.02]),
                               "jitter_s": r.choice([0.0, 0.0, 0.005]),
                               "bandwidth_Bps": r.choice([1e6, 1e9]),
                               "receiver_queueing": r.random() < 0.2}},
        "stop": {"steps": r.choice([6, 15, 30])},
        "eval": {"every_updates": r.choice([5, 17])},
    }
    if r.random() < 0.3:
        s["eval"].update({"per_node": True, "per_node_samples": 100})
    if r.random() < 0.15:
        s["eval"]["per_epoch"] = True
    return s


def differences(a_path, b_path):
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        return bit_differences(a, b), int(b.attrs.get("resident_vectors", 0))


def bit_differences(a, b):
    found = []

    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset) or "wall" in name.rsplit("/", 1)[-1]:
            return  # wall times (metrics/wall_time_s, epochs/probe_wall_s)
        if name not in b:
            found.append(f"{name}: missing")
            return
        x, y = obj[()], b[name][()]
        if x.shape != y.shape:
            found.append(f"{name}: shape {x.shape} vs {y.shape}")
        elif not np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            diff = np.nanmax(np.abs(x.astype(float) - y.astype(float)))
            found.append(f"{name}: largest difference {diff:.3g}")
    a.visititems(visit)
    for key in SUMMARY:
        if a.attrs.get(key) != b.attrs.get(key):
            found.append(f"attribute {key}: {a.attrs.get(key)} vs {b.attrs.get(key)}")
    return found


def close_differences(a_path, b_path, rel, points):
    with h5py.File(a_path, "r") as a, h5py.File(b_path, "r") as b:
        return close_to(a, b, rel, points), int(b.attrs.get("resident_vectors", 0))


def close_to(a, b, rel, points):
    found = []
    if a.attrs.get("status") != b.attrs.get("status"):
        return [f"status: {a.attrs.get('status')} vs {b.attrs.get('status')}"]
    if a.attrs.get("status") != "completed":  # both diverged: where is not comparable
        return found
    loss_a, loss_b = a.attrs["final_test_loss"], b.attrs["final_test_loss"]
    if not abs(loss_a - loss_b) <= rel * abs(loss_a):
        found.append(f"final test loss: {loss_a:.6g} vs {loss_b:.6g}")
    acc_a, acc_b = a.attrs["final_test_accuracy"], b.attrs["final_test_accuracy"]
    if not abs(acc_a - acc_b) * 100 <= points:
        found.append(f"final test accuracy: {acc_a:.4f} vs {acc_b:.4f}")
    rows_a, rows_b = a["metrics/test_loss"][()], b["metrics/test_loss"][()]
    if np.isfinite(rows_a).all() and not np.isfinite(rows_b).all():
        found.append("metrics/test_loss: not finite where the reference's is")
    return found


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("dtsim")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--count", type=int, default=16)
    p.add_argument("--keep", help="folder for the scenarios and traces of failures")
    p.add_argument("--backends", help="the reference, then the backends it checks "
                   "(default: cpu-batched, cpu-resident and, every third scenario, cpu)")
    p.add_argument("--close", type=float, default=0.0,
                   help="relative difference of the final test loss allowed (0: same bits)")
    p.add_argument("--points", type=float, default=2.0,
                   help="with --close: accuracy points allowed")
    p.add_argument("--scenario", help="run this scenario file once instead of random ones")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="with --scenario: passed on to dtsim run")
    p.add_argument("--against", metavar="OTHER_DTSIM",
                   help="compare with another dtsim binary instead: each scenario on one "
                   "backend in turn (--backends: the turn), OTHER_DTSIM's trace the reference")
    args = p.parse_args()
    if args.set and not args.scenario:
        p.error("--set: only with --scenario")
    count = 1 if args.scenario else args.count
    chosen = args.backends.split(",") if args.backends else None
    if chosen is not None and len(chosen) < 2 and not args.against:
        p.error("--backends: a reference and at least one backend to check")
    work = args.keep or tempfile.mkdtemp(prefix="dtsim-differential-")
    os.makedirs(work, exist_ok=True)
    ran = refused = failed = 0
    for i in range(count):
        r = random.Random(args.seed * 1_000_003 + i)
        base = os.path.join(work, f"s{args.seed}-{i}")
        path = args.scenario or base + ".yaml"
        if not args.scenario:
            with open(path, "w") as f:
                json.dump(scenario(r), f, indent=1)  # JSON is YAML
        extra = [a for kv in args.set for a in ("--set", kv)]
        runs = {}
        if args.against:  # one backend in turn, the other binary first: the reference
            turn = chosen or ["cpu", "cpu-batched", "cpu-resident"]
            backend = turn[i % len(turn)]
            plan = [(f"{backend} ({args.against})", args.against, backend),
                    (backend, args.dtsim, backend)]
        else:
            plan = [(b, args.dtsim, b) for b in chosen or
                    ["cpu-batched", "cpu-resident"] + (["cpu"] if i % 3 == 0 else [])]
        backends = [label for label, _, _ in plan]
        for label, binary, backend in plan:
            h5 = f"{base}-{len(runs)}-{backend}.h5"
            cmd = [binary, "run", path, "--quiet", "-o", h5, "--threads",
                   str(r.choice([1, 2])), *extra, "--set", f"model.backend={backend}"]
            done = subprocess.run(cmd, capture_output=True, text=True)
            runs[label] = (done.returncode, h5, " ".join(cmd),
                           (done.stderr.strip().splitlines() or [""])[-1])
        codes = {b: run[0] for b, run in runs.items()}
        if set(codes.values()) == {2}:  # the generator wrote a scenario dtsim refuses
            refused += 1
            print(f"scenario {i}: refused by every backend: {runs[backends[0]][3]}")
            if not args.scenario:
                os.remove(path)
            continue
        problems = []
        if len(set(codes.values())) > 1:
            problems.append(f"exit codes differ: {codes}")
            problems += [f"{b}: {run[3]}" for b, run in runs.items() if run[0] != 0]
        else:
            reference = runs[backends[0]][1]
            for backend in backends[1:]:
                if args.close > 0:
                    found, resident = close_differences(reference, runs[backend][1], args.close,
                                                        args.points)
                else:
                    found, resident = differences(reference, runs[backend][1])
                problems += [f"{backend}: {d}" for d in found]
                if backend.endswith("-resident") and codes[backend] == 0 and resident != 1:
                    problems.append(f"{backend}: the algorithm kept its vectors on the host")
        ran += 1
        if problems:
            failed += 1
            print(f"scenario {i} ({path}): {len(problems)} difference(s):")
            for line in problems[:8]:
                print(f"  {line}")
            for backend, run in runs.items():
                print(f"  {backend}: {run[2]}")
        else:
            for run in runs.values():
                if os.path.exists(run[1]):
                    os.remove(run[1])
            if not args.scenario:
                os.remove(path)
    on = ", ".join(chosen) if chosen else "cpu-batched, cpu-resident, cpu (every third)"
    if args.against:
        on = ", ".join(chosen or ["cpu", "cpu-batched", "cpu-resident"]) + " in turn, " + \
            f"{args.dtsim} against {args.against}"
    print(f"{ran} scenarios ran on {on}, {refused} refused, {failed} with differences")
    if args.scenario and ran == 0:
        print(f"{args.scenario} was refused by every backend")
        return 1
    if ran < count // 2:
        print("fewer than half of the scenarios ran: the generator no longer fits dtsim's keys")
        return 1
    if failed == 0 and not args.keep:
        os.rmdir(work)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
