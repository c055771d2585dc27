#!/usr/bin/python3
"""analysis/pivot.py: cells are mean ± 95% CI (Student t; default) or ± sample std over the
runs sharing a row and a column, with a line under the table saying which; rows and columns
in order of appearance or as ordered; NaN runs are counted, not averaged; unknown columns and
missing files exit 2 with one line and no traceback."""
import os
import subprocess
import sys
import tempfile

from cli_checks import expect_user_error, failures

PIVOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../analysis/pivot.py")

CSV = """trace,status,algorithm.name,nodes,final_acc
a1,completed,dsgd,16,0.80
a2,completed,dsgd,16,0.90
a3,completed,dsgd,32,0.70
b1,completed,qg,16,0.85
b2,diverged,qg,32,nan
b3,completed,qg,32,0.75
"""

# dsgd/16: 80, 90: s = 7.07, ci95 = t(0.975, 1) * s / sqrt(2) = 12.706 * 5 = 63.5. One value
# has no interval.
EXPECTED_CI95 = """| algorithm.name \\ nodes | 32 | 16 |
|---|---|---|
| qg | 75.0 (1 n/a) | 85.0 |
| dsgd | 70.0 | 85.0 ± 63.5 |

mean ± 95% CI (Student t, sample std n−1) over runs
"""

EXPECTED_STD = """| algorithm.name \\ nodes | 32 | 16 |
|---|---|---|
| qg | 75.0 (1 n/a) | 85.0 |
| dsgd | 70.0 | 85.0 ± 7.1 |

mean ± sample std (n−1) over runs
"""



def pivot(*args):
    return subprocess.run([sys.executable, PIVOT, *args], capture_output=True, text=True)


def expect_table(what, run, expected):
    if run.returncode != 0 or run.stdout != expected:
        failures.append(f"{what}: exit {run.returncode}, stderr {run.stderr!r}, table:\n"
                        f"{run.stdout}\nexpected:\n{expected}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "runs.csv")
        with open(path, "w") as f:
            f.write(CSV)
        common = [path, "--rows", "algorithm.name", "--cols", "nodes", "--value", "final_acc",
                  "--scale", "100", "--digits", "1", "--order-rows", "qg,dsgd",
                  "--order-cols", "32,16"]
        expect_table("default (ci95)", pivot(*common), EXPECTED_CI95)
        expect_table("--interval ci95", pivot(*common, "--interval", "ci95"), EXPECTED_CI95)
        expect_table("--interval std", pivot(*common, "--interval", "std"), EXPECTED_STD)
        expect_user_error("unknown --value",
                          pivot(path, "--rows", "algorithm.name", "--cols", "nodes", "--value",
                                "final_accuracy"),
                          "no column 'final_accuracy'", "did you mean 'final_acc'?")
        expect_user_error("unknown --rows",
                          pivot(path, "--rows", "algorithm.nam", "--cols", "nodes", "--value",
                                "final_acc"),
                          "--rows", "did you mean 'algorithm.name'?")
        expect_user_error("non-numeric --value",
                          pivot(path, "--rows", "nodes", "--cols", "status", "--value",
                                "algorithm.name"), "not a number")
        expect_user_error("missing file",
                          pivot(os.path.join(tmp, "nope.csv"), "--rows", "nodes", "--cols",
                                "status", "--value", "final_acc"), "nope.csv")
    if failures:
        sys.exit("pivot.py:\n" + "\n".join(failures))
    print("pivot.py: ok")


if __name__ == "__main__":
    main()
