#!/usr/bin/python3
"""The Python module end to end: runs from a dict and from a file with overrides, equal
traces for equal inputs, the CLI's one-line errors as ConfigError, load() as DataFrames, a
sweep and analyze(), and Ctrl-C (SIGINT) during a run and during a sweep: KeyboardInterrupt,
a closed trace with status `interrupted`, other Python threads running meanwhile (the GIL
is released), and a resumed sweep that completes every point exactly once.

    module_test.py   (PYTHONPATH holds the built package: <build>/python)"""
import csv
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import textwrap
import time


import dtsim

TINY = {
    "name": "py-tiny", "seed": 5, "nodes": 6,
    "data": {"dataset": "synthetic", "synthetic": {"features": 12, "classes": 3, "train": 900,
                                                   "test": 300},
             "partition": {"kind": "dirichlet", "alpha": 0.5, "min_size": 20}, "batch_size": 16},
    "model": {"kind": "mlp", "hidden": [16]},
    "topology": {"kind": "ring"},
    "algorithm": {"name": "dsgd", "mode": "async", "lr": 0.1, "momentum": 0.9},
    "system": {"compute": {"dist": "exponential", "mean_s": 0.01},
               "network": {"latency_s": 0.003}},
    "stop": {"epochs": 2},
    "eval": {"every_s": 0.02},
}

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def tiny_yaml(path, **changes):
    import yaml
    doc = {**TINY, **changes}
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_runs(tmp):
    a = dtsim.run(TINY, output=tmp / "a.h5")
    b = dtsim.run(TINY, output=tmp / "b.h5", threads=1)
    ta, tb = dtsim.load(a), dtsim.load(b)
    check(ta.status == "completed", f"dict run: status {ta.status}")
    check(len(ta.metrics) > 5 and "test_accuracy" in ta.metrics, "metrics table")
    check(len(ta.nodes) == 6 and "idle_s" in ta.nodes, f"nodes table: {len(ta.nodes)} rows")
    check(ta.scenario["nodes"] == 6 and ta.scenario["algorithm"]["name"] == "dsgd",
          "scenario dict")
    # Written as 1e+09 by dtsim (YAML 1.2): a number, not the text YAML 1.1 would make of it.
    bandwidth = ta.scenario["system"]["network"]["server_bandwidth_Bps"]
    check(isinstance(bandwidth, float) and bandwidth == 1e9, f"server_bandwidth_Bps {bandwidth!r}")
    check(ta.metrics.equals(tb.metrics.assign(wall_time_s=ta.metrics.wall_time_s)),
          "same scenario and seed, 2 threads vs 1: different metrics")
    check(ta.metrics.test_accuracy.iloc[-1] > 0.5, f"accuracy {ta.metrics.test_accuracy.iloc[-1]}")

    scenario = tiny_yaml(tmp / "tiny.yaml")
    c = dtsim.run_outcome(scenario, output=tmp / "c.h5", nodes=8, algorithm__lr=0.05,
                          **{"stop.epochs": 1})
    tc = dtsim.load(c.trace)
    check(c.status == "completed" and abs(c.epochs - 1) < 0.05, f"file run: {c.status} {c.epochs}")
    check(tc.scenario["nodes"] == 8 and tc.scenario["algorithm"]["lr"] == 0.05,
          "overrides by keyword (nodes, algorithm__lr, 'stop.epochs') not applied")
    check(abs(c.final_test_accuracy - tc.attrs["final_test_accuracy"]) < 1e-12,
          "RunOutcome and trace disagree")
    check("staleness/histogram" in tc.arrays and "events" not in tc.arrays,
          f"arrays without an event log: {sorted(tc.arrays)}")

    d = dtsim.load(dtsim.run(TINY, output=tmp / "d.h5", output__events="full"))
    events = d.arrays.get("events")
    check(events is not None and len(events) > 0 and "time_ns" in events.dtype.names,
          f"the event log (output.events: full) in Trace.arrays: {sorted(d.arrays)}")


def test_errors(tmp):
    def raises(call, *needles):
        try:
            call()
        except dtsim.ConfigError as e:
            message = str(e)
            check(isinstance(e, ValueError), "ConfigError is not a ValueError")
            check("\n" not in message and all(n in message for n in needles),
                  f"error message {message!r} lacks {needles}")
            return
        failures.append(f"no ConfigError for {needles}")

    raises(lambda: dtsim.run({**TINY, "nodse": 4}), "<dict>", "nodse", "did you mean")
    raises(lambda: dtsim.run(TINY, algorithm__lr=-1), "lr")
    raises(lambda: dtsim.run(tmp / "missing.yaml"), "missing.yaml")
    raises(lambda: dtsim.run(tiny_yaml(tmp / "bad.yaml", topology={"kind": "rnig"})), "bad.yaml",
           "rnig")
    # As the command line refuses them: thread counts, an empty output path, a line break.
    raises(lambda: dtsim.run(TINY, threads=0), "threads", "[1, 1024]")
    raises(lambda: dtsim.run(TINY, threads=1.5), "threads")
    raises(lambda: dtsim.run(TINY, output=""), "output")
    raises(lambda: dtsim.run(TINY, algorithm__lr="0.1\nnodes: 3"), "algorithm.lr", "line break")
    # NumPy scalars and paths are values like any other.
    import numpy as np
    e = dtsim.run_outcome(TINY, output=tmp / "np.h5", nodes=np.int64(4),
                          algorithm__lr=np.float32(0.1), **{"stop.epochs": 0.2})
    check(e.status == "completed" and dtsim.load(e.trace).scenario["nodes"] == 4,
          f"numpy values: {e.status}")


def test_sweep(tmp):
    tiny_yaml(tmp / "base.yaml", stop={"epochs": 1})
    (tmp / "sweep.yaml").write_text("name: py-sweep\nbase: base.yaml\n"
                                    "grid: {nodes: [4, 8], seed: [1, 2]}\n")
    folder = dtsim.sweep(tmp / "sweep.yaml", output=tmp / "sweep", jobs=2)
    rows = list(csv.DictReader(open(folder / "index.csv")))
    check(len(rows) == 4 and all(r["status"] == "completed" for r in rows), f"sweep index {rows}")
    table = dtsim.analyze(folder, by=["nodes"])
    check(len(table) == 4 and {"nodes", "final_acc", "status"} <= set(table.columns),
          f"analyze: {len(table)} rows, columns {list(table.columns)[:8]}")
    check(sorted(table.groupby("nodes").size().to_dict().items()) == [(4, 2), (8, 2)],
          "analyze: the by key is not a column to group on")
    check(dtsim.analyze(folder, by="nodes").equals(table), "analyze: by as a string")


CHILD = textwrap.dedent("""
    import pathlib, sys, threading, time, dtsim
    ticks = [0]
    def tick():  # a Python thread that needs the GIL: it writes its count to a file
        while True:
            ticks[0] += 1
            pathlib.Path(sys.argv[4]).write_text(str(ticks[0]))
            time.sleep(0.01)
    threading.Thread(target=tick, daemon=True).start()
    try:
        if sys.argv[1] == "run":
            dtsim.run(sys.argv[2], output=sys.argv[3])
        else:
            dtsim.sweep(sys.argv[2], output=sys.argv[3], jobs=1)
        print("finished", flush=True)
    except KeyboardInterrupt:
        print("KeyboardInterrupt", ticks[0], flush=True)
""")


def interrupt_child(args, ready):
    """Starts CHILD with `args` (what, file, output, tick file), sends it SIGINT once ready()
    holds; returns its stdout, stderr, the seconds from the signal to its exit, its exit
    code and whether ready() held (rather than the child exiting or 120 s passing)."""
    package_dir = str(pathlib.Path(dtsim.__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=package_dir)
    child = subprocess.Popen([sys.executable, "-c", CHILD, *map(str, args)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    was_ready = False
    while child.poll() is None and time.monotonic() < deadline:  # polls for a condition
        if ready():
            was_ready = True
            break
        time.sleep(0.05)
    start = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    return out.strip(), err, time.monotonic() - start, child.returncode, was_ready


def read_count(path):
    try:
        return int(path.read_text())
    except (FileNotFoundError, ValueError):  # not written yet, or caught mid-write
        return 0


def index_rows(folder):
    try:
        return list(csv.DictReader(open(folder / "index.csv")))
    except FileNotFoundError:
        return []


def test_interrupt(tmp):
    # A run (it would take hours). Once it is simulating (its trace file exists: planning,
    # which holds the GIL, is over), the Python ticker must advance 20 more ticks: it can
    # only while the run does not hold the GIL. Then SIGINT.
    long = tiny_yaml(tmp / "long.yaml", stop={"epochs": 100000})
    ticks = tmp / "ticks-run"
    at_start = []

    def simulating_and_ticking():
        if not at_start and (tmp / "long.h5.work").exists():
            at_start.append(read_count(ticks))
        return bool(at_start) and read_count(ticks) >= at_start[0] + 20

    out, err, took, code, ready = interrupt_child(["run", long, tmp / "long.h5", ticks],
                                                  simulating_and_ticking)
    check(ready, f"the run never simulated while another Python thread ran: {out!r} {err!r}")
    check(code == 0 and out.startswith("KeyboardInterrupt"), f"run + SIGINT: {out!r} {err!r}")
    check(took < 30, f"run stopped {took:.1f} s after SIGINT")
    t = dtsim.load(tmp / "long.h5")
    check(t.status == "interrupted" and len(t.metrics) > 0, f"interrupted trace: {t.status}")

    # A sweep of 4 points run one at a time: SIGINT once the first has finished, so that the
    # second is running. Then resume: only the unfinished points run.
    tiny_yaml(tmp / "sbase.yaml", stop={"epochs": 300})
    (tmp / "s.yaml").write_text("name: py-stop\nbase: sbase.yaml\ngrid: {seed: [1, 2, 3, 4]}\n")
    folder = tmp / "s"
    first_done = lambda: any(r["status"] == "completed" for r in index_rows(folder))  # noqa: E731
    out, err, took, code, ready = interrupt_child(["sweep", tmp / "s.yaml", folder,
                                                   tmp / "ticks-sweep"], first_done)
    check(ready, f"the sweep's first point never finished: {out!r} {err!r}")
    check(out.startswith("KeyboardInterrupt") and took < 30, f"sweep + SIGINT: {out!r} {err!r}")
    rows = index_rows(folder)
    statuses = [r["status"] for r in rows]
    check(statuses[0] == "completed" and statuses.count("completed") < 4,
          f"sweep not interrupted as expected: {statuses}")
    check("interrupted" in statuses, f"no point ended as interrupted: {statuses}")
    kept = {r["point"]: os.stat(r["trace"]).st_mtime_ns for r in rows if r["status"] == "completed"}
    dtsim.sweep(tmp / "s.yaml", output=folder, resume=True)
    rows = index_rows(folder)
    names = [r["point"] for r in rows]
    check(len(rows) == 4 and len(set(names)) == 4 and all(r["status"] == "completed" for r in rows),
          f"resumed sweep: {[(r['point'], r['status']) for r in rows]}")
    check(all(os.stat(r["trace"]).st_mtime_ns == kept[r["point"]] for r in rows if r["point"] in kept),
          "a finished point was run again")
    check(not list(folder.glob("*.partial")), "partial traces left after resume")


def main():
    with tempfile.TemporaryDirectory(prefix="dtsim_py_") as d:
        tmp = pathlib.Path(d)
        os.chdir(tmp)
        for test in (test_runs, test_errors, test_sweep, test_interrupt):
            test(tmp)
            print(f"{test.__name__}: {'ok' if not failures else 'failures so far'}")
    if failures:
        print(f"{len(failures)} failure(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
