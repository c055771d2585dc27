#!/usr/bin/python3
"""Checks `dtsim schema` against the shipped files: both schemas are valid draft 2020-12
schemas, every scenario and sweep file under scenarios/ passes its schema, and files with a
misspelled key, a wrong type, a value out of range or an unknown component name fail it.

    schema_check.py DTSIM SCENARIOS_DIR"""
import copy
import json
import pathlib
import re
import subprocess
import sys

import jsonschema
import yaml


class Yaml12Loader(yaml.SafeLoader):
    """PyYAML follows YAML 1.1, where 1e-3 is a string; dtsim (yaml-cpp) and editors read
    YAML 1.2, where it is a number."""


Yaml12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$|^[-+]?\.(inf|Inf|INF)$"
               r"|^\.(nan|NaN|NAN)$"),
    list("-+0123456789."))


def schema(dtsim, kind):
    out = subprocess.run([dtsim, "schema", kind], check=True, capture_output=True, text=True)
    s = json.loads(out.stdout)
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


def errors(validator, document):
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(document)]


def main(dtsim, folder):
    scenario, sweep = schema(dtsim, "scenario"), schema(dtsim, "sweep")
    failures, checked = [], 0
    for path in sorted(pathlib.Path(folder).rglob("*.yaml")):
        doc = yaml.load(path.read_text(), Loader=Yaml12Loader)
        validator = sweep if "base" in doc else scenario
        for e in errors(validator, doc):
            failures.append(f"{path}: {e}")
        checked += 1
    if checked < 10:
        failures.append(f"only {checked} files found under {folder}")

    good = {"nodes": 8, "data": {"dataset": "synthetic"},
            "algorithm": {"name": "choco-sgd", "lr": 0.1, "compressor": {"kind": "topk"}},
            "stop": {"epochs": 1}}
    if errors(scenario, good):
        failures.append(f"a valid scenario fails: {errors(scenario, good)}")

    def bad(change, what):
        doc = copy.deepcopy(good)
        change(doc)
        if not errors(scenario, doc):
            failures.append(f"not refused: {what}")

    bad(lambda d: d.update(nodse=8), "a misspelled top-level key")
    bad(lambda d: d["algorithm"].update(lrr=0.1), "a misspelled algorithm key")
    bad(lambda d: d["algorithm"]["compressor"].update(ratio=2.0), "topk ratio 2 (range (0, 1])")
    bad(lambda d: d.update(nodes=0), "nodes 0")
    bad(lambda d: d.update(nodes=2.5), "nodes 2.5")
    bad(lambda d: d["algorithm"].update(lr="fast"), "lr a string")
    bad(lambda d: d["algorithm"].update(name="dpsgd"), "an unknown algorithm")
    bad(lambda d: d.update(topology={"kind": "ring", "mixing": "metropolis", "p": -1}), "p < 0")
    bad(lambda d: d.update(eval={"per_node": "maybe"}), "a flag that is not true/false")

    # Keys and bounds that follow the data: accepted by dtsim, so the schema must accept them.
    for what, doc in [
            ("a user's arrays with every key", {
                "nodes": 4, "stop": {"epochs": 1}, "data": {"dataset": "arrays", "arrays": {
                    "file": "d.npz", "train_x": "a", "train_y": "b", "test_x": "c",
                    "test_y": "d", "classes": 10, "standardize": True}}}),
            ("CIFAR-100's coarse labels", {
                "nodes": 4, "stop": {"epochs": 1},
                "data": {"dataset": "cifar100", "path": "c", "labels": "coarse"}}),
            ("5 classes per node (Fashion-MNIST has 10)", {
                "nodes": 4, "stop": {"epochs": 1}, "data": {"partition": {
                    "kind": "classes_per_node", "classes_per_node": 5}}}),
            ("image-shaped synthetic data", {
                "nodes": 4, "stop": {"epochs": 1},
                "data": {"dataset": "synthetic", "synthetic": {"image": [1, 8, 8]}}})]:
        if errors(scenario, doc):
            failures.append(f"{what} fails the schema: {errors(scenario, doc)}")
    # A default that follows the input's shape is not stated as a constant.
    padding = scenario.schema["properties"]["model"]["properties"]["padding"]
    if "default" in padding:
        failures.append(f"model.padding states a default ({padding['default']}), which follows "
                        "the input's size")

    good_sweep = {"base": "x.yaml", "grid": {"nodes": [8, 16], "algorithm.lr": [0.1]},
                  "points": [{"algorithm.name": "ad-psgd", "label": "AD-PSGD"}],
                  "tune": {"key": "algorithm.lr", "factors": [0.5, 2], "seeds": [101]}}
    if errors(sweep, good_sweep):
        failures.append(f"a valid sweep fails: {errors(sweep, good_sweep)}")
    for change, what in [
            (lambda d: d["grid"].update({"algorithm.lrr": [0.1]}), "an unknown grid key"),
            (lambda d: d["grid"].update(nodes=[0]), "grid nodes 0"),
            (lambda d: d["grid"].update(nodes=[]), "an empty grid axis"),
            (lambda d: d["points"][0].update({"algorithm.name": "nope"}), "a bad point name"),
            (lambda d: d.pop("base"), "no base"),
            (lambda d: d["tune"].update(goal="up"), "tune goal up")]:
        doc = copy.deepcopy(good_sweep)
        change(doc)
        if not errors(sweep, doc):
            failures.append(f"not refused (sweep): {what}")

    for f in failures:
        print(f)
    print(f"{checked} shipped files checked, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
