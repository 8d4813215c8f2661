"""Reading back what a command wrote: CSV as pandas.DataFrame when pandas is
importable, else typed columns; JSON parsed; Markdown and YAML as text."""

import csv
import io
import json
import math
import os

from ._arguments import _path


def _pandas():
    try:
        import pandas
    except ImportError:
        return None
    return pandas


def _number(text):
    try:
        return int(text)
    except ValueError:
        return float(text)


_BOOLEANS = {"true": True, "True": True, "TRUE": True, "false": False, "False": False,
             "FALSE": False}


def _columns(rows, header):
    """Columns typed as pandas.read_csv types them: integers, floats (an
    empty cell in a numeric column is NaN), booleans (true/false), else
    strings (empty: None)."""
    columns = {}
    for i, name in enumerate(header):
        cells = [row[i] if i < len(row) else "" for row in rows]
        filled = [c for c in cells if c != ""]
        if filled and len(filled) == len(cells) and all(c in _BOOLEANS for c in filled):
            columns[name] = [_BOOLEANS[c] for c in cells]
            continue
        try:
            values = [_number(c) for c in filled]
        except ValueError:
            columns[name] = [c if c != "" else None for c in cells]
            continue
        if len(filled) == len(cells) and all(isinstance(v, int) for v in values):
            columns[name] = values
        else:
            columns[name] = [float(c) if c != "" else math.nan for c in cells]
    return columns


def read_table(path):
    """A CSV file kvsim wrote, as a pandas.DataFrame when pandas is
    importable, else a dict of columns (lists). Leading ``#`` lines (the
    definition a file carries, as hitcurve.csv does) are skipped."""
    with open(_path(path, "path"), newline="") as f:
        text = f.read()
    lines = text.splitlines(keepends=True)
    while lines and lines[0].startswith("#"):
        lines.pop(0)
    text = "".join(lines)
    pandas = _pandas()
    if pandas is not None:
        if not text.strip():
            return pandas.DataFrame()
        return pandas.read_csv(io.StringIO(text))
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return {}
    return _columns(rows[1:], rows[0])


def _read_json(path):
    with open(path) as f:
        return json.load(f)


def _read_text(path):
    with open(path) as f:
        return f.read()


def _files(folder):
    """Every file at the top of a command's folder, by name: CSV as tables,
    JSON parsed, Markdown and YAML as text (HTML pages and charts are left
    to a browser: they stay in `out` when one is given)."""
    files = {}
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not os.path.isfile(path) or name.startswith("."):
            continue
        if name.endswith(".csv"):
            files[name] = read_table(path)
        elif name.endswith(".json"):
            files[name] = _read_json(path)
        elif name.endswith((".md", ".yaml")):
            files[name] = _read_text(path)
    return files


def _records(rows):
    """A list of dicts as a table (DataFrame, or a dict of columns)."""
    pandas = _pandas()
    if pandas is not None:
        return pandas.DataFrame(rows)
    names = []
    for r in rows:
        names += [k for k in r if k not in names]
    return {n: [r.get(n) for r in rows] for n in names}


def _run_folder(folder):
    """A run folder's files: metrics.json, requests.csv, timeline.csv and
    scenario.resolved.yaml (None where the folder has none: a compare's variant)."""
    resolved = os.path.join(folder, "scenario.resolved.yaml")
    return {
        "metrics": _read_json(os.path.join(folder, "metrics.json")),
        "requests": read_table(os.path.join(folder, "requests.csv")),
        "timeline": read_table(os.path.join(folder, "timeline.csv")),
        "resolved_scenario": _read_text(resolved) if os.path.isfile(resolved) else None,
    }
