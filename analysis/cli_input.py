"""What the analysis scripts (pivot.py, seed_pairs.py, plot.py) share about their input: the
one-line user error, reading an `dtsim analyze --csv` file, strict column names with a
did-you-mean, and the natural order of labels (numbers by value, before text)."""
import csv
import difflib


class UserError(Exception):
    """A mistake in the command line or its input: one line on stderr, exit status 2."""


def did_you_mean(name, choices):
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean '{close[0]}'?)" if close else f" (has: {', '.join(choices)})"


def read_rows(path):
    """The rows of a CSV file (dicts) and its column names."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            return list(reader), reader.fieldnames or []
    except OSError as e:
        raise UserError(f"{path}: {e.strerror}") from None
    except (csv.Error, UnicodeDecodeError) as e:
        raise UserError(f"{path}: not a CSV file ({e})") from None


def check_columns(path, columns, option, keys):
    for k in keys:
        if k not in columns:
            raise UserError(f"{option}: {path} has no column '{k}'" + did_you_mean(k, columns))


def natural_key(value):
    """Sort key: numbers by value (4 < 16), before any text, text by characters."""
    try:
        return (0, float(value), "")
    except ValueError:
        return (1, 0.0, value)
