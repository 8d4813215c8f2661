"""Python arguments as the command line's options."""

import contextlib
import json
import os
import shutil
import tempfile


def _path(value, what):
    """A path given as str or os.PathLike, as a str."""
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, str):
            return path
    raise TypeError(f"{what}: a path (str or os.PathLike), not {type(value).__name__}")


def _items(value):
    """One value or several, as a list (None: none)."""
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike, int, float)):
        return [value]
    return list(value)


def _text(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return str(value)


def _comma(value):
    """A comma-separated option's value from one value or a list."""
    return ",".join(_text(v) for v in _items(value))


def _option(args, flag, value):
    if value is not None:
        args += [flag, _text(value)]


def _flag(args, flag, on):
    if on:
        args.append(flag)


def _sets(args, overrides, flag="--set"):
    """--set K=V for each of `overrides`: strings "K=V", or a dict {K: V}."""
    if isinstance(overrides, str):
        overrides = [overrides]
    if isinstance(overrides, dict):
        overrides = [f"{k}={_yaml_value(v)}" for k, v in overrides.items()]
    for s in overrides or ():
        args += [flag, s]


def _yaml_value(value):
    if isinstance(value, (dict, list, tuple, bool)) or value is None:
        return json.dumps(value)
    return _text(value)


@contextlib.contextmanager
def _folder(out, name):
    """Where a command writes: `out` as given, or a temporary folder that is
    removed after its files are read."""
    if out is not None:
        yield _path(out, "out")
        return
    tmp = tempfile.mkdtemp(prefix="kvsim-")
    try:
        yield os.path.join(tmp, name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
