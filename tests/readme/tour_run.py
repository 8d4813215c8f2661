"""Runs one shell block of a document in a fresh working folder and checks
what its commands quote against what they printed and wrote.

The working folder is a view of the source tree: every top-level entry of
the tree is a symbolic link (configs, tests, docs, ...) except `build/`,
which holds only `kvsim` (a link to the binary under test), and `out/`,
which does not exist until a command writes it. The shared data sits beside
it as it sits beside the tree (`../shared`, a link), when it exists. So a
command can read only the tree and what an earlier command of the same
block wrote: a block that reads another block's output folder fails.
"""

import os
import re
import shutil
import subprocess
import sys
import time

import tour_numbers

SKIP = 77
OUTPUT_SUFFIXES = (".json", ".md", ".csv", ".txt", ".yaml")
# Per-request and per-interval rows: thousands of values, any small number
# is among them, so they would confirm anything; a quoted figure is a summary.
ROW_FILES = {"requests.csv", "timeline.csv", "journal.jsonl"}
MAX_OUTPUT_BYTES = 4 << 20
EXIT_RE = re.compile(r"\bexit (\d)\b")
MARKER = ".readme-tour"


def is_kvsim(cmd):
    argv = cmd.argv()
    return bool(argv) and os.path.basename(argv[0]) == "kvsim"


def runs(cmd):
    """kvsim commands run, and python3 scripts that read their output;
    make, mpirun, srun and the fuzz harnesses are not run here."""
    argv = cmd.argv()
    if not argv:
        return False
    return is_kvsim(cmd) or os.path.basename(argv[0]) == "python3"


def _uncommented(text):
    return "\n".join(line.split("#", 1)[0] for line in text.split("\n"))


def needs_shared_data(block, source):
    """A block needs ../shared/data when a command names it, runs `generate`
    (stories260K), or names a scenario or sweep (or a sweep's base) that
    does."""
    for cmd in block.commands:
        if not runs(cmd):
            continue
        if "shared/data" in _uncommented(cmd.shell_text()):
            return True
        argv = cmd.argv()
        if is_kvsim(cmd) and len(argv) > 1 and argv[1] == "generate":
            return True
        for arg in argv[1:]:
            path = os.path.join(source, arg)
            if arg.endswith(".yaml") and os.path.isfile(path) and _yaml_needs_data(path, source):
                return True
    return False


def _yaml_needs_data(path, source, depth=0):
    with open(path, encoding="utf-8") as f:
        text = _uncommented(f.read())
    if "shared/data" in text:
        return True
    m = re.search(r"^base:\s*(\S+)", text, re.M)
    if m and depth < 3:
        base = m.group(1)
        for candidate in (os.path.join(os.path.dirname(path), base),
                          os.path.join(source, "configs", "scenarios", base + ".yaml")):
            if os.path.isfile(candidate):
                return _yaml_needs_data(candidate, source, depth + 1)
    return False


def make_view(work, source, kvsim):
    """A fresh working folder holding a view of the source tree."""
    if os.path.exists(work):
        if not os.path.exists(os.path.join(work, MARKER)):
            sys.exit(f"readme tour: {work} exists and is not a readme-tour folder; not touching it")
        shutil.rmtree(work)
    repo = os.path.join(work, "repo")
    os.makedirs(os.path.join(repo, "build"))
    open(os.path.join(work, MARKER), "w").close()
    for entry in os.listdir(source):
        if entry in ("out", ".git") or entry.startswith("build"):
            continue
        os.symlink(os.path.join(source, entry), os.path.join(repo, entry))
    os.symlink(os.path.abspath(kvsim), os.path.join(repo, "build", "kvsim"))
    shared = os.path.join(os.path.dirname(os.path.abspath(source)), "shared")
    if os.path.isdir(shared):
        os.symlink(shared, os.path.join(work, "shared"))
    return repo


def remove_view(work):
    if os.path.exists(os.path.join(work, MARKER)):
        shutil.rmtree(work)


def _snapshot(repo):
    seen = {}
    for root, dirs, files in os.walk(repo):
        # The view's links lead into the source tree: not outputs.
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            st = os.stat(path)
            seen[path] = (st.st_mtime_ns, st.st_size)
    return seen


def _written_texts(before, after):
    texts = []
    for path, stamp in sorted(after.items()):
        if before.get(path) == stamp:
            continue
        name = os.path.basename(path)
        if name in ROW_FILES or not name.endswith(OUTPUT_SUFFIXES) or stamp[1] > MAX_OUTPUT_BYTES:
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(MAX_OUTPUT_BYTES)
        if head.lstrip().startswith('{"traceEvents"') or '"traceEvents"' in head[:200]:
            continue  # a --trace file: every event's timestamps
        texts.append((path, head))
    return texts


INPUT_SUFFIXES = (".yaml", ".csv", ".json")


def input_lines(cmd, repo):
    """The lines of a command's inputs, lower-cased: its own options (a flag
    with its value, a --set KEY=VALUE as "KEY VALUE") and the files it names
    (a scenario, a sweep and its base, a CSV of measurements), comments
    aside."""
    lines = []
    argv = cmd.argv()
    for k, arg in enumerate(argv[1:], 1):
        flag = argv[k - 1] if argv[k - 1].startswith("-") else ""
        lines.append((flag + " " + arg.replace("=", " ")).lower())
        for part in arg.split("="):
            path = os.path.join(repo, part)
            if part.endswith(INPUT_SUFFIXES) and os.path.isfile(path):
                lines += _uncommented(_input_text(path, repo)).lower().split("\n")
    return lines


def is_input(n, lines):
    """A quoted number is the text repeating an input when an input line
    holds the same digits and a word the quote has next to the number
    ("8 replicas" and `replica: {count: 8}`; "hit rate >= 0.6" and
    `prefix_hit_rate: {min: 0.6}`)."""
    digits = re.escape(n.text.replace(",", ""))
    number = re.compile(r"(?<![\w.])" + digits + r"(?![\w]|\.\d)")
    words = [w for w in n.context if len(w) >= 3 or any(c.isdigit() for c in w)]
    return bool(words) and any(number.search(line) and any(w in line for w in words) for line in lines)


def _input_text(path, repo, depth=0):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read(MAX_OUTPUT_BYTES)
    m = re.search(r"^base:\s*(\S+)", text, re.M) if path.endswith(".yaml") else None
    if m and depth < 3:
        for candidate in (os.path.join(os.path.dirname(path), m.group(1)),
                          os.path.join(repo, "configs", "scenarios", m.group(1) + ".yaml")):
            if os.path.isfile(candidate):
                text += "\n" + _input_text(candidate, repo, depth + 1)
                break
    return text


def quoted_wall_seconds(block):
    return sum(sum(tour_numbers.wall_seconds(q.text)) for c in block.commands for q in c.quotes)


def expected_exit(cmd):
    for q in cmd.quotes:
        m = EXIT_RE.search(q.text)
        if m:
            return int(m.group(1))
    return 0


def _describe_skips(skipped):
    by_reason = {}
    for token, reason in skipped:
        by_reason.setdefault(reason, []).append(token)
    return "; ".join(f"{reason}: {' '.join(tokens)}" for reason, tokens in sorted(by_reason.items()))


def run_block(block, source, kvsim, work, out=print):
    """Runs the block and checks it; returns (exit code, stats)."""
    stats = {"commands": 0, "numbers": 0, "mismatches": 0, "seconds": 0.0, "weak": 0}
    repo = make_view(work, source, kvsim)
    env = dict(os.environ)
    env["PATH"] = os.path.join(repo, "build") + os.pathsep + env.get("PATH", "")
    env.pop("KVSIM_NO_AVX512", None)
    failed = False
    block_values = []
    block_inputs = []
    for cmd in block.commands:
        where = f"{block.doc}:{cmd.line}"
        if not runs(cmd):
            out(f"{where}: not run (not a kvsim command): {cmd.text}")
            continue
        stats["commands"] += 1
        before = _snapshot(repo)
        start = time.monotonic()
        proc = subprocess.run(["bash", "-c", cmd.shell_text()], cwd=repo, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL)
        seconds = time.monotonic() - start
        stats["seconds"] += seconds
        text = proc.stdout.decode("utf-8", errors="replace")
        want = expected_exit(cmd)
        out(f"{where}: {cmd.text}")
        out(f"    exit {proc.returncode} (expected {want}), {seconds:.1f} s")
        if proc.returncode != want:
            failed = True
            out(f"    FAIL {where}: exit {proc.returncode}, the text says {want}; output's tail:")
            for line in text.strip().split("\n")[-15:]:
                out("      | " + line)
        quoted_wall = sum(sum(tour_numbers.wall_seconds(q.text)) for q in cmd.quotes)
        if quoted_wall:
            out(f"    the text says about {quoted_wall:g} s of wall time; this run took {seconds:.1f} s"
                " (not checked: machines differ)")
        values = tour_numbers.output_values(text)
        for path, content in _written_texts(before, _snapshot(repo)):
            values += tour_numbers.output_values(content)
        block_values += values
        inputs = input_lines(cmd, repo)
        block_inputs += inputs
        failed |= not _check(block.doc, cmd.quotes, tour_numbers.Pool(values), inputs, stats, out)
    if block.tables:
        out(f"{block.doc}:{block.tables[0].line}: a table quoting the block's commands")
        failed |= not _check(block.doc, block.tables, tour_numbers.Pool(block_values), block_inputs,
                             stats, out)
    return (1 if failed else 0), stats


def _check(doc, quotes, pool, inputs, stats, out):
    """Every result the quotes state against one pool; False on a mismatch."""
    ok = True
    for q in quotes:
        line_text = EXIT_RE.sub("exit _", q.text)
        numbers, skipped = tour_numbers.quoted_numbers(line_text, q.in_table)
        checked = []
        for n in numbers:
            if is_input(n, inputs):
                skipped.append((n.text, "stated by the command's input"))
                continue
            stats["numbers"] += 1
            if pool.matches(n):
                checked.append(n.text)
                if _weak(pool, n):
                    stats["weak"] += 1
                continue
            ok = False
            stats["mismatches"] += 1
            near = pool.nearest(n)
            near_text = f"{near:.6g}" if near is not None else "none"
            out(f"    FAIL {doc}:{q.line}: quoted {'~' if n.tilde else ''}{n.text}"
                f"{(' ' + n.unit) if n.unit else ''} (within {n.tolerance():.3g}) is not in the output;"
                f" nearest value {near_text}")
        note = f"    line {q.line}: checked {' '.join(checked) or '-'}"
        if skipped:
            note += f"  [not results: {_describe_skips(skipped)}]"
        out(note)
    return ok


def _weak(pool, n):
    """A quoted number is weak when its neighbours one unit of its last digit
    away also match: an edit of that digit would pass unseen."""
    step = 10.0 ** -n.decimals
    up = tour_numbers.Quoted(n.text, n.value + 2 * step, n.decimals, False, n.unit, 0)
    down = tour_numbers.Quoted(n.text, n.value - 2 * step, n.decimals, False, n.unit, 0)
    return pool.matches(up) and (down.value < 0 or pool.matches(down))
