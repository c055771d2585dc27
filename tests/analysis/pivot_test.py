#!/usr/bin/python3
"""analysis/pivot.py: cells are mean ± sample std over the runs sharing a row and a column;
rows and columns in order of appearance or as ordered; NaN runs are counted, not averaged."""
import os
import subprocess
import sys
import tempfile

PIVOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../analysis/pivot.py")

CSV = """trace,status,algorithm.name,nodes,final_acc
a1,completed,dsgd,16,0.80
a2,completed,dsgd,16,0.90
a3,completed,dsgd,32,0.70
b1,completed,qg,16,0.85
b2,diverged,qg,32,nan
b3,completed,qg,32,0.75
"""

EXPECTED = """| algorithm.name \\ nodes | 32 | 16 |
|---|---|---|
| qg | 75.0 ± 0.0 (1 n/a) | 85.0 ± 0.0 |
| dsgd | 70.0 ± 0.0 | 85.0 ± 7.1 |
"""


def main():
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write(CSV)
    out = subprocess.run([sys.executable, PIVOT, f.name, "--rows", "algorithm.name", "--cols",
                          "nodes", "--value", "final_acc", "--scale", "100", "--digits", "1",
                          "--order-rows", "qg,dsgd", "--order-cols", "32,16"],
                         capture_output=True, text=True, check=True).stdout
    bad = subprocess.run([sys.executable, PIVOT, f.name, "--rows", "algorithm.name", "--cols",
                          "nodes", "--value", "final_accuracy"], capture_output=True, text=True)
    os.unlink(f.name)
    if out != EXPECTED:
        sys.exit(f"unexpected table:\n{out}\nexpected:\n{EXPECTED}")
    if bad.returncode == 0 or "no column 'final_accuracy'" not in bad.stderr:
        sys.exit(f"an unknown column must fail with its name, got: {bad.stderr}")
    print("pivot.py: ok")


if __name__ == "__main__":
    main()
