#!/usr/bin/python3
"""analysis/seed_pairs.py: per-seed gains of A over B within each row, only over the seeds
both have, in seed order; NaN seeds shown as nan; lower-is-better flips the sign; unknown
columns, unknown pair values and missing files exit 2 with one line and no traceback."""
import os
import subprocess
import sys
import tempfile

from cli_checks import expect_user_error, failures

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../analysis/seed_pairs.py")

# n = 4: seeds 1, 2 for both orders; seed 3 only for "random" (left out). n = 8: seed 2 NaN.
CSV = """trace,nodes,order,seed,loss
a,4,random,1,0.50
b,4,random,2,0.40
c,4,random,3,0.30
d,4,cd,1,0.45
e,4,cd,2,0.44
f,8,random,1,0.20
g,8,random,2,nan
h,8,cd,1,0.25
i,8,cd,2,0.10
"""

# 4: (0.50 - 0.45) / 0.50 = +10.0%, (0.40 - 0.44) / 0.40 = -10.0%; 8: -25.0%, nan.
EXPECTED_LOWER = """| nodes | cd vs random |
|---|---|
| 4 | +10.0 / -10.0% |
| 8 | -25.0 / nan% |

gain of A over B in loss, per seed in order (lower is better)
"""

EXPECTED_HIGHER = """| nodes | cd vs random |
|---|---|
| 4 | -10.0 / +10.0% |
| 8 | +25.0 / nan% |

gain of A over B in loss, per seed in order
"""


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "runs.csv")
        with open(path, "w") as f:
            f.write(CSV)
        common = [path, "--rows", "nodes", "--key", "order", "--pairs", "cd:random", "--value",
                  "loss"]
        for what, extra, expected in (("lower is better", ["--lower-is-better"], EXPECTED_LOWER),
                                      ("higher is better", [], EXPECTED_HIGHER)):
            r = run(*common, *extra)
            if r.returncode != 0 or r.stdout != expected:
                failures.append(f"{what}: exit {r.returncode}, stderr {r.stderr!r}, got:\n"
                                f"{r.stdout}\nexpected:\n{expected}")
        expect_user_error("unknown column", run(path, "--rows", "nodes", "--key", "order",
                                                "--pairs", "cd:random", "--value", "los"),
                          "no column 'los'")
        expect_user_error("unknown pair value", run(path, "--rows", "nodes", "--key", "order",
                                                    "--pairs", "cd:grab", "--value", "loss"),
                          "order = grab")
        expect_user_error("missing file", run(os.path.join(tmp, "nope.csv"), "--rows", "nodes",
                                              "--key", "order", "--pairs", "cd:random",
                                              "--value", "loss"), "nope.csv")
    if failures:
        sys.exit("seed_pairs.py:\n" + "\n".join(failures))


if __name__ == "__main__":
    main()
