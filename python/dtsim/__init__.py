"""dtsim from Python: run scenarios and sweeps in this process, load traces as DataFrames.

    import dtsim
    trace = dtsim.run("scenarios/quickstart.yaml", nodes=8, stop__epochs=1)
    t = dtsim.load(trace)
    t.metrics.plot(x="sim_time_s", y="test_accuracy")

A scenario is a YAML file or a dict of the same keys. Keyword arguments override keys by
their dotted path, with `__` for the dot (`algorithm__lr=0.1` is `--set algorithm.lr=0.1`);
`**{"algorithm.lr": 0.1}` works too. A bad scenario raises `dtsim.ConfigError` (a
ValueError) with the CLI's one-line message. The run simulates without holding the GIL;
Ctrl-C stops it (its trace is closed with status `interrupted`) and raises
KeyboardInterrupt. See docs/python.md.
"""
import json
import os
import pathlib
import tempfile

from . import _dtsim
from ._dtsim import ConfigError, RunOutcome
from .trace import Trace, load

__all__ = ["run", "run_outcome", "sweep", "load", "analyze", "Trace", "ConfigError", "RunOutcome"]


def _plain(value):
    """JSON for the values NumPy and pathlib give (np.int64(4), np.float32, Path)."""
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise ConfigError(f"a value of type {type(value).__name__} is not a scenario value")


def _override_strings(overrides):
    """--set strings from keyword arguments; values as YAML (JSON is YAML's flow syntax)."""
    out = []
    for key, value in overrides.items():
        text = value if isinstance(value, str) else json.dumps(value, default=_plain)
        if "\n" in text:
            raise ConfigError(f"--set {key.replace('__', '.')}: a value with a line break")
        out.append(key.replace("__", ".") + "=" + text)
    return out


def _threads(threads):
    """0 (all cores) for None, else an int in [1, 1024], as the CLI's --threads."""
    if threads is None:
        return 0
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= 1024:
        raise ConfigError(f"threads: expected an integer in [1, 1024], got {threads!r}")
    return threads


def _output(output):
    if output is None:
        return ""
    out = os.fspath(output)
    if not out:
        raise ConfigError("output: expected a trace file name, got ''")
    return out


def run_outcome(scenario, *, output=None, threads=None, **overrides):
    """Runs a scenario (path or dict); returns the RunOutcome (trace path, status, final
    accuracy, simulated and wall seconds). `threads`: oneTBB threads (default all cores;
    results do not depend on it)."""
    sets = _override_strings(overrides)
    out, workers = _output(output), _threads(threads)
    if isinstance(scenario, dict):
        text = json.dumps(scenario, default=_plain)
        return _dtsim.run_scenario("", text, "<dict>", sets, out, workers)
    path = os.fspath(scenario)
    if not os.path.exists(path):
        raise ConfigError(f"{path}: no such scenario file")
    return _dtsim.run_scenario(path, "", "", sets, out, workers)


def run(scenario, *, output=None, threads=None, **overrides):
    """Runs a scenario (path or dict) and returns the trace's path. A run that diverged
    returns its trace too (status `diverged`: a result); `load(path).status` tells."""
    return pathlib.Path(run_outcome(scenario, output=output, threads=threads, **overrides).trace)


def sweep(sweep_file, *, output=None, jobs=1, resume=True, shard=None):
    """Runs every point of a sweep file (resumable; `resume=True` skips finished points) and
    returns its output folder. Raises RuntimeError when points failed (see index.csv)."""
    path = os.fspath(sweep_file)
    if not os.path.exists(path):
        raise ConfigError(f"{path}: no such sweep file")
    args = [path, "--jobs", str(int(jobs))]
    if output is not None:
        args += ["-o", os.fspath(output)]
    if resume:
        args.append("--resume")
    if shard is not None:
        args += ["--shard", f"{shard[0]}/{shard[1]}"]
    folder = pathlib.Path(os.fspath(output) if output is not None else _dtsim.sweep_output_dir(path))
    code = _dtsim.sweep(args)
    if code != 0:
        raise RuntimeError(f"dtsim sweep {path}: exit {code}; see {folder}/index.csv")
    return folder


def analyze(*traces, by=None, target=None, at_time=None):
    """`dtsim analyze --csv` as a DataFrame: one row per trace (files or folders of them),
    with every stability measure and run total as columns and the scenario keys named in
    `by` (dotted, e.g. ["nodes", "algorithm.name"] or "nodes,algorithm.name") as columns to
    group on with pandas.
    `target`: accuracy for the time-to-target measures; `at_time`: simulated seconds for
    acc_at_time."""
    import pandas as pd

    with tempfile.TemporaryDirectory() as tmp:
        csv = os.path.join(tmp, "analyze.csv")
        args = [os.fspath(t) for t in traces] + ["--csv", csv, "--quiet"]
        if by:
            args += ["--by", by if isinstance(by, str) else ",".join(by)]
        if target is not None:
            args += ["--target", str(target)]
        if at_time is not None:
            args += ["--at-time", str(at_time)]
        code = _dtsim.analyze(args)
        if code != 0:
            raise RuntimeError(f"dtsim analyze: exit {code}")
        return pd.read_csv(csv)
