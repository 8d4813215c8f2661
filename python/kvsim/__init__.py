"""kvsim from Python: the command line's commands, returning what they write.

Each function runs the command of the same name (``kvsim run``, ``compare``,
``capacity``, ``sweep``, ``search``, ``calibrate``, ``hitcurve``,
``generate``) in this process, through the very C++ code and options the
command line uses, and returns the files that command writes, read back:
CSV files as ``pandas.DataFrame`` when pandas is importable (else a dict of
columns, each a list), JSON files as dicts and lists, Markdown and YAML as
text. Keyword arguments are the command's options (``--kv-dtype`` is
``kv_dtype``, ``--set`` is ``overrides``); a list stands for a comma-separated
or repeated option. Paths are ``str`` or ``os.PathLike``.

Nothing is written unless ``out=`` names a folder: without it the command
writes into a temporary folder that is read and removed. A bad input raises
:class:`InputError` (a ``ValueError``; :class:`ConfigError` when kvsim's
``FILE:LINE:COL`` diagnostics say where) with the message ``kvsim`` prints;
a failed ``expect`` raises :class:`ExpectFailed` (an ``AssertionError``).
Ctrl-C stops a command within a second and raises ``KeyboardInterrupt``. One command runs at a time in a process.
"""

import json
import os

from . import _kvsim
from ._arguments import _comma, _flag, _folder, _items, _option, _path, _sets, _yaml_value
from ._errors import (CheckFailed, ConfigError, Error, ExpectFailed, InputError,
                      InternalError, OutOfMemory, _EXPECT_PREFIX, _raise)
from ._tables import _files, _number, _records, _run_folder, read_table

__all__ = [
    "run", "compare", "capacity", "sweep", "search", "calibrate", "hitcurve", "generate",
    "read_table", "version", "commit",
    "Error", "InputError", "ConfigError", "ExpectFailed", "CheckFailed", "InternalError",
    "OutOfMemory",
]


def _command(args):
    return _kvsim.command([str(a) for a in args])


def _study(args, out, name, table):
    """Runs a study command into a folder and returns its files, with the
    main CSV as "table" and "folder" (None when it was temporary)."""
    with _folder(out, name) as folder:
        outcome = _command(args + ["--out", folder])
        result = None
        if os.path.isdir(folder):
            result = _files(folder)
            result["table"] = result.get(table)
            result["folder"] = folder if out is not None else None
        if outcome["exit_code"] != 0:
            _raise(outcome, result)
        return result


def _is_yaml_text(scenario):
    return "\n" in scenario or scenario.lstrip().startswith("{")


def run(scenario=None, overrides=(), *, from_=None, out=None, trace=None, force=False,
        check_expect=True, configs_dir=None):
    """Run a scenario, as ``kvsim run`` does, and return what it writes.

    scenario: a path (str or os.PathLike; a one-line str is always a path, so
        a misspelt one is "FILE:0:0: file not found"), YAML text (a str with a
        newline, or a flow map "{...}") or a dict.
    overrides: ``--set`` assignments, ["kv_cache.block_size=64", ...] or a dict.
    from_: ``--from``: a run folder's metrics.json or scenario.resolved.yaml to
        run again (instead of `scenario`).
    out: ``--out``: also keep the run folder there (report.md, report.html, ...).
    trace: ``--trace``: write the run as Chrome trace-event JSON to this path.
    force: ``--force``.
    check_expect: raise ExpectFailed when the scenario's ``expect`` fails
        (``kvsim run`` exits 1); False returns the failures instead.
    configs_dir: where a YAML text's or dict's ``device:`` and ``model:``
        names resolve (default: the configs/ of the source tree kvsim was
        built from); a file's names resolve as ``kvsim run`` resolves them.

    Returns {"metrics": metrics.json as a dict, "requests": requests.csv,
    "timeline": timeline.csv (tables), "resolved_scenario":
    scenario.resolved.yaml (text), "expect_failures": [lines], "folder": out
    or None}.
    """
    with _folder(out, "run") as folder:
        common = ["--quiet", "--out", folder]
        _flag(common, "--force", force)
        if trace is not None:
            common += ["--trace", _path(trace, "trace")]
        if from_ is not None:
            if scenario is not None:
                raise TypeError("run: give a scenario or from_, not both")
            args = ["run", "--from", _path(from_, "from_")] + common
            _sets(args, overrides)
            outcome = _command(args)
        elif isinstance(scenario, dict):
            outcome = _run_text(json.dumps(scenario), "<python dict>", configs_dir, overrides,
                                folder, force, trace)
        elif isinstance(scenario, str) and _is_yaml_text(scenario):
            outcome = _run_text(scenario, "<python>", configs_dir, overrides, folder, force,
                                trace)
        elif isinstance(scenario, (str, os.PathLike)):
            args = ["run", _path(scenario, "scenario")] + common
            _sets(args, overrides)
            outcome = _command(args)
        else:
            raise TypeError("scenario: a path (str or os.PathLike), YAML text or a dict, not "
                            f"{type(scenario).__name__}")
        failures = [line[len(_EXPECT_PREFIX):] for line in outcome["stderr"].splitlines()
                    if line.startswith(_EXPECT_PREFIX)]
        expect_only = outcome["exit_code"] == 1 and outcome["kind"] == ""
        if outcome["exit_code"] != 0 and not (expect_only and not check_expect):
            result = None
            if expect_only:
                result = _run_folder(folder)
                result.update(expect_failures=failures, folder=folder if out else None)
            _raise(outcome, result)
        result = _run_folder(folder)
        result["expect_failures"] = failures
        result["folder"] = folder if out is not None else None
        return result


def _run_text(text, source, configs_dir, overrides, folder, force, trace):
    if isinstance(overrides, dict) or isinstance(overrides, str):
        args = []
        _sets(args, overrides)
        overrides = args[1::2]
    return _kvsim.run_text(text, source, "" if configs_dir is None else _path(
        configs_dir, "configs_dir"), list(overrides or ()), folder, force,
        "" if trace is None else _path(trace, "trace"))


def compare(scenario, vary=(), *, variants=(), overrides=(), out=None, force=False):
    """Run variants of a scenario side by side, as ``kvsim compare`` does.

    scenario: the scenario file (str or os.PathLike).
    vary: ``--vary`` axes: "KEY=V1,V2" strings, or a dict {KEY: [V1, V2]}.
    variants: ``--variant``: "LABEL: K=V; K=V" strings, or a dict
        {LABEL: {K: V}} (together the first axis).
    overrides: ``--set`` in every variant (list of "K=V" or a dict).
    out, force: ``--out``, ``--force``.

    Returns {"table": compare.csv (one row per variant, ratios against the
    first), "compare.csv", "compare.json", "compare.md": the files, "runs":
    [{"label", "metrics", "requests", "timeline", "resolved_scenario"} per
    variant, from its run folder], "folder"}.
    """
    args = ["compare", _path(scenario, "scenario"), "--quiet"]
    if isinstance(vary, dict):
        vary = [f"{k}={_comma(v)}" for k, v in vary.items()]
    elif isinstance(vary, str):
        vary = [vary]
    for v in vary:
        args += ["--vary", v]
    if isinstance(variants, dict):
        variants = [f"{label}: " + "; ".join(
            f"{k}={_yaml_value(v)}" for k, v in sets.items()) if isinstance(sets, dict)
            else f"{label}: " + "; ".join(_items(sets)) for label, sets in variants.items()]
    elif isinstance(variants, str):
        variants = [variants]
    for v in variants:
        args += ["--variant", v]
    _sets(args, overrides)
    _flag(args, "--force", force)
    with _folder(out, "compare") as folder:
        outcome = _command(args + ["--out", folder])
        if outcome["exit_code"] != 0:
            _raise(outcome)
        result = _files(folder)
        result["table"] = result["compare.csv"]
        result["runs"] = []
        for v in result["compare.json"]["variants"]:
            run_result = _run_folder(os.path.join(folder, v["folder"]))
            run_result["label"] = v["label"]
            result["runs"].append(run_result)
        result["folder"] = folder if out is not None else None
        return result


def capacity(device, model, *, context=None, kv_dtype=None, block_size=None,
             memory_fraction=None, policy=None, main_pool_fraction=None,
             chunk_pool_fraction=None, tp=None, ep=None, pp=None, slo=None, workload=None,
             overrides=(), out=None, force=False):
    """The KV capacity table, and with `slo` the highest rate meeting it, as
    ``kvsim capacity`` does.

    device, model: one or a list (names, files, Hugging Face folders: str or
        os.PathLike), ``--device`` and ``--model``.
    context, kv_dtype, tp, ep, pp: one or a list (``--context`` ...).
    block_size, memory_fraction, policy, main_pool_fraction,
        chunk_pool_fraction: the options of the same name.
    slo: "ttft_p99_ms=X,tpot_p99_ms=Y" or a dict {"ttft_p99_ms": X}, with
        workload: the scenario whose workload.arrival.rate_per_s is searched,
        and overrides: ``--set`` on it.
    out, force: ``--out``, ``--force``.

    Returns {"table": capacity.csv (one row per device x model x dtype x
    context x layout; an invalid layout is a row with its reason in "note"),
    "capacity.csv", "capacity.json", "capacity.md", "slo.json" (with `slo`):
    the files, "slo_table": slo.json's searches as a table (None without
    `slo`), "folder"}.
    """
    args = ["capacity", "--device", _comma(device), "--model", _comma(model)]
    for flag, value in (("--context", context), ("--kv-dtype", kv_dtype), ("--tp", tp),
                        ("--ep", ep), ("--pp", pp)):
        if value is not None:
            args += [flag, _comma(value)]
    for flag, value in (("--block-size", block_size), ("--memory-fraction", memory_fraction),
                        ("--policy", policy), ("--main-pool-fraction", main_pool_fraction),
                        ("--chunk-pool-fraction", chunk_pool_fraction)):
        _option(args, flag, value)
    if isinstance(slo, dict):
        slo = ",".join(f"{k}={v}" for k, v in slo.items())
    _option(args, "--slo", slo)
    if workload is not None:
        args += ["--workload", _path(workload, "workload")]
    _sets(args, overrides)
    _flag(args, "--force", force)
    result = _study(args, out, "capacity", "capacity.csv")
    searches = (result.get("slo.json") or {}).get("searches")
    result["slo_table"] = None
    if searches is not None:
        rows = [{k: (tuple(v) if k == "bracket" else v) for k, v in s.items() if k != "probes"}
                for s in searches]
        result["slo_table"] = _records(rows)
    return result


def sweep(file, *, jobs=None, out=None, resume=False, force=False):
    """Run every variant of a sweep file, as ``kvsim sweep`` does (each
    variant a worker process running the kvsim executable built with this
    module).

    file: the sweep YAML (str or os.PathLike).
    jobs: ``--jobs`` (default: the machine's cores).
    out, resume, force: ``--out``, ``--resume`` (needs `out`), ``--force``.

    Returns {"table": sweep.csv (one row per variant: its grid values,
    status, reason and metrics), "sweep.csv", "sweep.json", "sweep.md": the
    files, "folder"}. Variants that failed for the environment or kvsim
    raise InputError or InternalError, with the tables in ``error.result``.
    """
    if resume and out is None:
        raise ValueError("sweep: resume=True needs out= (the folder whose journal is resumed)")
    args = ["sweep", _path(file, "file"), "--quiet"]
    _option(args, "--jobs", jobs)
    _flag(args, "--resume", resume)
    _flag(args, "--force", force)
    result = _study(args, out, "sweep", "sweep.csv")
    return result


def search(file, *, jobs=None, out=None, force=False):
    """Find the cheapest configuration meeting an SLO, as ``kvsim search``
    does.

    file: the search YAML (with a ``search:`` section; str or os.PathLike).
    jobs, out, force: ``--jobs``, ``--out``, ``--force``.

    Returns {"table": search.csv (one row per probe: candidate, rate, status,
    whether it meets the SLO and why), "search.csv", "search.json",
    "search.md": the files, "chosen": the chosen configuration's label (None
    when none meets the SLO), "folder"}.
    """
    args = ["search", _path(file, "file"), "--quiet"]
    _option(args, "--jobs", jobs)
    _flag(args, "--force", force)
    result = _study(args, out, "search", "search.csv")
    result["chosen"] = result["search.json"].get("chosen")
    return result


def calibrate(measurements, *, fit=False, cv=False, hold_out=None, out=None, force=False):
    """Predicted against published figures, as ``kvsim calibrate`` does;
    with `fit` the device parameters fitted on them.

    measurements: one CSV file or a list (str or os.PathLike).
    fit, cv: ``--fit``, ``--cv``.
    hold_out: ``--hold-out``: one device or a list.
    out, force: ``--out``, ``--force``.

    Returns the files by name: without a fit {"calibration.csv",
    "calibration.json", "calibration.md"}, with one {"calibration.md",
    "fit.json", "fitted-<device>.yaml" ...}; "table" is calibration.csv
    (None with a fit); "folder".
    """
    args = ["calibrate"] + [_path(m, "measurements") for m in _items(measurements)]
    _flag(args, "--fit", fit)
    _flag(args, "--cv", cv)
    if hold_out is not None:
        args += ["--hold-out", _comma(hold_out)]
    _flag(args, "--force", force)
    result = _study(args, out, "calibration", "calibration.csv")
    return result


def hitcurve(scenario, capacity_tokens, *, overrides=(), out=None, force=False):
    """The prefix-cache hit rate at each cache capacity, as ``kvsim
    hitcurve`` does (cache-only replays, no timing).

    scenario: the scenario file (str or os.PathLike).
    capacity_tokens: ``--capacity-tokens``: one capacity or a list (1e6 is
        accepted).
    overrides, out, force: ``--set``, ``--out``, ``--force``.

    Returns {"table": hitcurve.csv (one row per capacity), "hitcurve.csv",
    "hitcurve.json", "hitcurve.md": the files, "folder"}.
    """
    args = ["hitcurve", _path(scenario, "scenario"), "--capacity-tokens",
            _comma(capacity_tokens)]
    _sets(args, overrides)
    _flag(args, "--force", force)
    result = _study(args, out, "hitcurve", "hitcurve.csv")
    return result


_DRIFT_COLUMNS = ["option", "segments", "tokens", "recomputed", "kv_max_abs_diff",
                  "kv_mean_abs_diff", "logit_max_abs_diff", "top1_agreements", "generated"]


def generate(prompt=None, *, steps=None, policy=None, kv_dtype=None, block_size=None,
             ctx_size=None, type_k=None, type_v=None, no_v_trans=False, n_keep=None,
             defrag_thold=None, update_mode=None, window=None, context_reset=False,
             checkpoint=None, tokenizer=None, model=None):
    """Greedy text from the stories260K llama2.c model through a real cache
    policy, as ``kvsim generate`` does (it writes no files: this returns what
    it prints).

    prompt, steps, policy, kv_dtype, block_size, ctx_size, type_k, type_v,
    no_v_trans, n_keep, defrag_thold, update_mode, window, context_reset,
        model: the options of the same name.
    checkpoint, tokenizer: the model's files (str or os.PathLike; default the
        shared data folder's copy).

    Returns {"text": the generated text, "context_shift": the context-shift
    line (llama_cells runs that shifted) or None, "window": the lines a run
    past its context prints (sliding_window, context_reset: what it kept,
    its drift against the recompute and the full context) or None,
    "chunk_reuse": for a
    policy that reuses chunks (chunk_lru), its drift against a full prefill
    per option as a table, else None; "stdout": all it printed}.
    """
    args = ["generate"]
    for flag, value in (("--model", model), ("--prompt", prompt), ("--steps", steps),
                        ("--policy", policy), ("--kv-dtype", kv_dtype),
                        ("--block-size", block_size), ("--ctx-size", ctx_size),
                        ("--type-k", type_k), ("--type-v", type_v), ("--n-keep", n_keep),
                        ("--defrag-thold", defrag_thold), ("--update-mode", update_mode),
                        ("--window", window)):
        _option(args, flag, value)
    _flag(args, "--no-v-trans", no_v_trans)
    _flag(args, "--context-reset", context_reset)
    for flag, value in (("--checkpoint", checkpoint), ("--tokenizer", tokenizer)):
        if value is not None:
            args += [flag, _path(value, flag[2:])]
    outcome = _command(args)
    if outcome["exit_code"] != 0:
        _raise(outcome)
    printed = outcome["stdout"]
    text, shift, drift, window_lines = printed, None, None, None
    marker = "\nchunk reuse vs full prefill"
    if marker in text:
        text, table = text.split(marker, 1)
        drift = _records([_drift_row(line) for line in table.splitlines()[2:] if line.strip()])
    for lead in ("sliding window: ", "context reset: "):
        marker = "\n" + lead
        if marker in text:
            text, rest = text.split(marker, 1)
            window_lines = lead + rest.strip()
    marker = "\ncontext shift: "
    if marker in text:
        text, rest = text.split(marker, 1)
        shift = "context shift: " + rest.strip()
    if text.endswith("\n"):
        text = text[:-1]
    return {"text": text, "context_shift": shift, "window": window_lines, "chunk_reuse": drift,
            "stdout": printed}


def _drift_row(line):
    # "  OPTION  segments tokens recomputed kv_max kv_mean logit_max A/B": the
    # option's name may have spaces, the seven figures after it have none.
    fields = line.split()
    agree, generated = fields[-1].split("/")
    values = [_number(f) for f in fields[-7:-1]]
    return dict(zip(_DRIFT_COLUMNS,
                    [" ".join(fields[:-7])] + values + [int(agree), int(generated)]))


def version():
    """kvsim's version."""
    return _kvsim.version()


def commit():
    """The commit kvsim was built from."""
    return _kvsim.commit()
