"""Shared by the analysis scripts' tests: the list of failed checks and the user-error check."""
failures = []


def expect_user_error(what, run, *needles):
    """A user error: exit 2, one line on stderr containing every needle, no traceback."""
    lines = run.stderr.strip().splitlines()
    if run.returncode != 2 or len(lines) != 1 or "Traceback" in run.stderr \
            or not all(n in run.stderr for n in needles):
        failures.append(f"{what}: want exit 2 and one line with {needles}, got exit "
                        f"{run.returncode}: {run.stderr!r}")
