"""A dtsim trace (one HDF5 file per run, docs/trace-schema.md) as pandas DataFrames."""
import dataclasses
import re

import h5py
import numpy as np
import pandas as pd
import yaml

SCHEMA_VERSION = 1


class _Yaml12Loader(yaml.SafeLoader):
    """dtsim writes YAML 1.2, where 1e+09 and 1.0e9 are numbers; PyYAML follows YAML 1.1,
    which reads them as text."""


_Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\.(inf|Inf|INF)$"
               r"|^\.(nan|NaN|NAN)$"),
    list("-+0123456789."))


@dataclasses.dataclass
class Trace:
    """One run. `metrics`: a row per evaluation; `nodes`: a row per node; `epochs`: a row
    per pass over the data (empty without eval.per_epoch); `scenario`: the resolved
    scenario (it reproduces the run); `attrs`: every root attribute (build, totals);
    `arrays`: the datasets that are not table columns (label histograms, staleness)."""

    path: str
    status: str
    scenario: dict
    attrs: dict
    metrics: pd.DataFrame
    nodes: pd.DataFrame
    epochs: pd.DataFrame
    arrays: dict


def _scalar(value):
    """An attribute as a Python value: text, a number, or an array."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.generic) or (isinstance(value, np.ndarray) and value.size == 1):
        return _scalar(value.item())
    return value


def _table(group, prefix, arrays):
    """The group's 1-D datasets of one length as a DataFrame; the rest go to `arrays`."""
    if group is None:
        return pd.DataFrame()
    columns = {}
    for name, item in group.items():
        if not isinstance(item, h5py.Dataset):
            continue
        data = item[()]
        if data.ndim == 1:
            columns[name] = data
        else:
            arrays[f"{prefix}/{name}"] = data
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:  # a .partial cut between columns: keep the common rows
        rows = min(lengths)
        columns = {k: v[:rows] for k, v in columns.items()}
    return pd.DataFrame(columns)


def load(path):
    """Reads a trace (`.h5`, or the `.partial` of a run that did not finish)."""
    path = str(path)
    with h5py.File(path, "r") as f:
        attrs = {k: _scalar(v) for k, v in f.attrs.items()}
        version = attrs.get("schema_version")
        if version is not None and int(version) > SCHEMA_VERSION:
            raise ValueError(f"{path}: trace schema version {version}; this module reads up to "
                             f"{SCHEMA_VERSION}")
        arrays = {}
        metrics = _table(f.get("metrics"), "metrics", arrays)
        nodes = _table(f.get("nodes"), "nodes", arrays)
        epochs = _table(f.get("epochs"), "epochs", arrays)
        staleness = f.get("staleness")
        if isinstance(staleness, h5py.Group):
            for key, item in staleness.items():
                if isinstance(item, h5py.Dataset):
                    arrays[f"staleness/{key}"] = item[()]
        events = f.get("events")  # one compound dataset (output.events: full)
        if isinstance(events, h5py.Dataset):
            arrays["events"] = events[()]
    scenario = yaml.load(attrs.get("scenario", ""), Loader=_Yaml12Loader) or {}
    return Trace(path, attrs.get("status", "?"), scenario, attrs, metrics, nodes, epochs, arrays)
