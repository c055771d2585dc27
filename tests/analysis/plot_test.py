#!/usr/bin/python3
"""analysis/plot.py on tiny synthetic inputs: curves from HDF5 traces and measures against a
CSV column (one panel per --measure) as `dtsim report` calls them; --no-svg; strict keys and
columns: a user error exits 2 with one line on stderr (did-you-mean), never a traceback."""
import os
import subprocess
import sys
import tempfile

from cli_checks import expect_user_error, failures

import h5py
import numpy as np

PLOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../analysis/plot.py")

# (file, nodes, label, algorithm, seed, epochs): different lengths exercise the common grid.
TRACES = [("a1.h5", 8, "a", "dsgd", 1, 5), ("a2.h5", 8, "a", "dsgd", 2, 4),
          ("b1.h5", 8, "b", "qg", 1, 5), ("c1.h5", 16, "a", "dsgd", 1, 5)]

CSV = """trace,status,nodes,label,final_acc,node_acc_mean,acc_std_2nd_half,acc_worst_drop
a1.h5,completed,"8","a",0.80,0.78,0.010,0.02
a2.h5,completed,"8","a",0.84,0.80,0.012,0.03
b1.h5,diverged,"8","b",nan,nan,nan,nan
b2.h5,completed,"8","b",0.70,0.69,0.020,0.05
c1.h5,completed,"16","a",0.82,0.79,0.011,0.02
c2.h5,completed,"16","a",0.86,0.83,0.009,0.01
d1.h5,completed,"16","b",0.75,0.72,0.015,0.04
"""



def write_trace(path, nodes, label, algorithm, seed, epochs):
    with h5py.File(path, "w") as f:
        f.attrs["scenario"] = (f"nodes: {nodes}\nlabel: {label}\nseed: {seed}\n"
                               f"algorithm: {{name: {algorithm}, lr: 0.1}}\n")
        f.attrs["name"] = os.path.basename(path)
        f.attrs["status"] = "completed"
        m = f.create_group("metrics")
        epoch = np.arange(epochs + 1, dtype=float)
        m["epoch"] = epoch
        m["sim_time_s"] = epoch * 1.5
        m["test_accuracy"] = 0.9 - 0.5 * np.exp(-epoch) - 0.01 * seed


def plot(*args):
    env = dict(os.environ, MPLBACKEND="Agg")
    return subprocess.run([sys.executable, PLOT, *args], capture_output=True, text=True, env=env)


def expect_ok(what, run, output, svg):
    png_ok = os.path.isfile(output + ".png") and os.path.getsize(output + ".png") > 1000
    if run.returncode != 0 or not png_ok or os.path.exists(output + ".svg") != svg \
            or "wrote " + output + ".png" not in run.stdout:
        failures.append(f"{what}: exit {run.returncode}, png {png_ok}, svg "
                        f"{os.path.exists(output + '.svg')} (want {svg}), stdout {run.stdout!r}, "
                        f"stderr {run.stderr!r}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        traces_dir = os.path.join(tmp, "traces")
        os.makedirs(traces_dir)
        traces = []
        for name, *spec in TRACES:
            traces.append(os.path.join(traces_dir, name))
            write_trace(traces[-1], *spec)
        runs_csv = os.path.join(tmp, "runs.csv")
        with open(runs_csv, "w") as f:
            f.write(CSV)
        no_label_csv = os.path.join(tmp, "no-label.csv")
        with open(no_label_csv, "w") as f:
            f.write("\n".join(",".join(c for i, c in enumerate(line.split(",")) if i != 3)
                              for line in CSV.splitlines()) + "\n")
        out = os.path.join(tmp, "out")

        # As `dtsim report` calls it.
        expect_ok("report's curves",
                  plot(*traces, "--panel", "nodes", "--colour", "label", "--x", "epoch", "--y",
                       "test_accuracy", "--legend-below", "--no-svg", "-o", out + "/curves"),
                  out + "/curves", svg=False)
        expect_ok("report's measures vs nodes",
                  plot(runs_csv, "--vs", "nodes", "--colour", "label", "--measure",
                       "final_acc,node_acc_mean,acc_std_2nd_half,acc_worst_drop", "--no-svg",
                       "-o", out + "/vs-nodes"),
                  out + "/vs-nodes", svg=False)
        # A measure none of a label's runs has (too few evaluations): drawn without that
        # label, and without matplotlib's "converting a masked element" warning on stderr.
        gaps_csv = os.path.join(tmp, "gaps.csv")
        with open(gaps_csv, "w") as f:
            f.write(CSV.replace("0.010,0.02", "nan,0.02").replace("0.012,0.03", "nan,0.03")
                    .replace("0.011,0.02", "nan,0.02").replace("0.009,0.01", "nan,0.01"))
        gaps = plot(gaps_csv, "--vs", "nodes", "--colour", "label", "--measure",
                    "acc_std_2nd_half", "--no-svg", "-o", out + "/gaps")
        expect_ok("a measure missing at one point", gaps, out + "/gaps", svg=False)
        if gaps.stderr:
            failures.append(f"a measure missing at one point: stderr {gaps.stderr!r}")
        # A directory of traces, composite colour, --where; png and svg by default.
        expect_ok("curves with --where and svg",
                  plot(traces_dir, "--panel", "nodes", "--colour", "algorithm.name,label",
                       "--where", "algorithm.name=dsgd", "-o", out + "/where"),
                  out + "/where", svg=True)
        expect_ok("one measure", plot(runs_csv, "--vs", "nodes", "--colour", "label",
                                      "--measure", "final_acc", "-o", out + "/vs-one"),
                  out + "/vs-one", svg=True)

        # Strict keys and columns.
        expect_user_error("unknown --colour key",
                          plot(*traces, "--colour", "algorithm.nam", "-o", out + "/x"),
                          "--colour", "no trace has key 'algorithm.nam'",
                          "did you mean 'algorithm.name'")
        expect_user_error("unknown --panel key", plot(*traces, "--panel", "node", "-o", out + "/x"),
                          "--panel", "did you mean 'nodes'")
        expect_user_error("unknown --where key",
                          plot(*traces, "--where", "lable=a", "-o", out + "/x"),
                          "--where", "did you mean 'label'")
        expect_user_error("--where without =", plot(*traces, "--where", "label", "-o", out + "/x"),
                          "not KEY=VALUE")
        expect_user_error("unknown --y column",
                          plot(*traces, "--y", "test_acc", "-o", out + "/x"),
                          "--y", "did you mean 'test_accuracy'")
        expect_user_error("missing trace", plot(traces[0], tmp + "/nope.h5", "-o", out + "/x"),
                          "nope.h5")
        expect_user_error("not a trace", plot(runs_csv, "-o", out + "/x"), "runs.csv")
        expect_user_error("--colour not a CSV column",
                          plot(no_label_csv, "--vs", "nodes", "--colour", "label", "--measure",
                               "final_acc", "-o", out + "/x"),
                          "--colour", "'label'")
        expect_user_error("unknown --measure",
                          plot(runs_csv, "--vs", "nodes", "--colour", "label", "--measure",
                               "final_acc,node_acc_men", "-o", out + "/x"),
                          "--measure", "did you mean 'node_acc_mean'")
        expect_user_error("unknown --vs", plot(runs_csv, "--vs", "node", "--colour", "label",
                                               "-o", out + "/x"), "--vs", "did you mean 'nodes'")
        expect_user_error("non-numeric --vs", plot(runs_csv, "--vs", "label", "--colour",
                                                   "nodes", "--measure", "final_acc",
                                                   "-o", out + "/x"), "--vs", "not a number")
        if os.path.exists(out + "/x.png"):
            failures.append("a failed call wrote a plot")
    if failures:
        sys.exit("plot.py:\n" + "\n".join(failures))
    print("plot.py: ok")


if __name__ == "__main__":
    main()
