#!/usr/bin/python3
"""dataset: arrays end to end with NumPy's and h5py's own writers: the same arrays saved as
.npz (stored and compressed), a folder of .npy files and an HDF5 file give bit-identical
runs; bad arrays are refused with exit code 2 and one line naming the key.

    arrays_check.py DTSIM"""
import os
import subprocess
import sys
import tempfile

import h5py
import numpy as np

SCENARIO = """nodes: 4
data:
  dataset: arrays
  batch_size: 16
  arrays: {{file: {file}, standardize: true}}
  partition: {{kind: dirichlet, alpha: 0.5}}
model: {{kind: mlp, hidden: [16]}}
algorithm: {{name: dsgd, lr: 0.1}}
stop: {{epochs: 2}}
eval: {{every_epochs: 0.5}}
"""


def arrays(rng):
    classes, features = 5, 12
    means = rng.normal(size=(classes, features)) * 2
    def draw(n):
        y = rng.integers(0, classes, size=n)
        return (means[y] + rng.normal(size=(n, features))).astype(np.float32), y.astype(np.int64)
    x_train, y_train = draw(800)
    x_test, y_test = draw(200)
    return dict(x_train=x_train, y_train=y_train, x_test=x_test, y_test=y_test)


def run(dtsim, folder, file, extra=()):
    path = os.path.join(folder, "s.yaml")
    with open(path, "w") as f:
        f.write(SCENARIO.format(file=file))
    out = os.path.join(folder, "out.h5")
    p = subprocess.run([dtsim, "run", path, "-o", out, "--quiet", *extra],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return p.returncode, p.stderr.strip(), None
    with h5py.File(out, "r") as h:  # every measure but the wall clock
        metrics = {k: h["metrics"][k][...] for k in h["metrics"] if k != "wall_time_s"}
    return 0, "", metrics


def main(dtsim):
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        a = arrays(np.random.default_rng(7))
        np.savez_compressed(os.path.join(folder, "compressed.npz"), **a)
        np.savez(os.path.join(folder, "stored.npz"), **a)
        os.mkdir(os.path.join(folder, "npy"))
        for k, v in a.items():
            np.save(os.path.join(folder, "npy", k + ".npy"), v)
        with h5py.File(os.path.join(folder, "arrays.h5"), "w") as h:
            for k, v in a.items():
                h[k] = v
        results = {}
        for file in ["compressed.npz", "stored.npz", "npy", "arrays.h5"]:
            rc, err, metrics = run(dtsim, folder, file)
            if rc != 0:
                failures.append(f"{file}: exit {rc}: {err}")
                continue
            results[file] = metrics
        if len(results) == 4:
            first = results["compressed.npz"]
            for file, m in results.items():
                for k in first:
                    if m[k].tobytes() != first[k].tobytes():
                        failures.append(f"{file}: /metrics/{k} differs from compressed.npz's")
            acc = first["test_accuracy"][-1]
            if not acc > 0.6:  # 5 well-separated classes: a working run learns them
                failures.append(f"final test accuracy {acc:.3f}, expected > 0.6")

        def refused(name, change, expect):
            b = {k: v.copy() for k, v in a.items()}
            change(b)
            np.savez(os.path.join(folder, name + ".npz"), **b)
            rc, err, _ = run(dtsim, folder, name + ".npz")
            if rc != 2 or "\n" in err or expect not in err:
                failures.append(f"{name}: expected exit 2 and one line with '{expect}', "
                                f"got {rc}: {err}")

        refused("rows", lambda b: b.update(y_train=b["y_train"][:-1]),
                "data.arrays.train_y: y_train has 799 labels but x_train has 800 examples")
        refused("label", lambda b: b["y_test"].__setitem__(3, -1),
                "data.arrays.test_y: y_test[3] = -1: expected a whole label in [0, 5)")
        refused("nan", lambda b: b["x_train"].__setitem__((10, 2), np.nan),
                "data.arrays.train_x: x_train has a NaN value at example 10, feature 2")
        refused("shape", lambda b: b.update(x_test=b["x_test"][:, :5]),
                "data.arrays.test_x: test examples have another shape")
        refused("missing", lambda b: b.pop("x_test"),
                "no array 'x_test' (the archive holds: x_train, y_train, y_test)")
        refused("fortran", lambda b: b.update(x_train=np.asfortranarray(b["x_train"])),
                "Fortran order")
        refused("scalar", lambda b: b.update(x_train=np.float32(5)),
                "data.arrays.train_x: x_train has shape (), expected (examples, features)")
        refused("huge-label", lambda b: b["y_train"].__setitem__(0, 2e12),
                "data.arrays.train_y: y_train has a label of 1999999991808: expected whole "
                "labels in [0, 1048576)")
    for f in failures:
        print(f)
    print(f"{len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
