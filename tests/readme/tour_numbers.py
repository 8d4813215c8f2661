"""Which numbers a quoted line states as results, and whether an output holds them.

The rules (also in tests/readme/README.md):

Not results (never checked), by form:
  - anything in `backticks` (names, keys, flags, paths);
  - a number that is part of a word: a letter, digit, `_`, `.` or a hyphen
    after a word with a letter before it (910B2, TP8, p99, fp16, llama-3-8b,
    AR-128, T9A1-14), or
    letters after it that are not a unit (70B, 8B, 200GE, Q23t);
  - a number right after `=` (KEY=VALUE) or that is a version (v0.15.0);
  - a wall-clock time: a duration after "in about" / "about" or before
    "on N cores", and the N cores (machines differ; the runner prints its
    own time instead);
  - the first column of a quoted table (the row's label) and its header;
  - a number the command's inputs state beside a word the quote has next to
    it ("8 replicas": `replica: {count: 8}` in the scenario; its text, the
    scenario, sweep or CSV it names: tour_run.is_input);
  - a number in a quoted line ending with the marker `(derived)`: the line
    says what it is derived from, the numbers it is derived from are checked
    where they are quoted.

A result N quoted with d decimals matches an output value v when v rounds to
N at d decimals (|v - N| <= half a unit of the last quoted digit); `~N` (or
`about N`) widens that to one unit of the last significant digit (~224: 223
to 225; ~1600: 1500 to 1700). An integer result with thousands separators
(12,031) is read as 12031. In a range or list ("3.1-4.4 TB", "48 / 562 ms")
the unit after the last number is every number's. Signs are not compared (a table's "+1.3%" and
"-1.3%" are the same magnitude; the sign is printed beside it). A unit after
the number lets a value printed in a smaller unit match too: `s` also
matches milliseconds / 1000, `%` a fraction x 100, `K` / `M` thousands /
millions, `TB` / `GB` bytes / 1e12 / 1e9, `GiB` / `MiB` / `KiB` bytes / 2^30
/ 2^20 / 2^10, `x` a ratio as printed.
"""

import bisect
import math
import re

NUMBER_RE = re.compile(r"(?P<num>\d{1,3}(?:,\d{3})+(?![\d,])|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
ATTACHED_UNITS = {"", "x", "%", "ms", "s", "us", "ns", "K", "M", "k"}
SPACED_UNITS = {
    "s": [1e-3],            # a value in ms, quoted in s
    "%": [100.0],
    "K": [1e-3], "k": [1e-3],
    "M": [1e-6],
    "TB": [1e-12], "GB": [1e-9], "MB": [1e-6],
    "TiB": [2.0 ** -40], "GiB": [2.0 ** -30], "MiB": [2.0 ** -20], "KiB": [2.0 ** -10],
}
WALL_BEFORE_RE = re.compile(r"(?:in about|about|takes about|~)\s*$")
WALL_UNIT_RE = re.compile(r"^\s*(?:s|ms|seconds?|minutes?|min|hours?)\b")
CORES_AFTER_RE = re.compile(r"^\s*(?:s|seconds?|minutes?|min)\s+on\s+\d+\s+cores")
DERIVED_MARK = "(derived)"


class Quoted:
    """A number a line states as a result."""

    def __init__(self, text, value, decimals, tilde, unit, column, context=()):
        self.text = text
        self.value = value
        self.decimals = decimals
        self.tilde = tilde
        self.unit = unit
        self.column = column
        self.context = context    # the words next to it, for tour_run.is_input

    def tolerance(self):
        unit = 10.0 ** -self.decimals
        if not self.tilde:
            return unit / 2 * (1 + 1e-9)
        if self.decimals == 0:
            digits = self.text.replace(",", "")
            zeros = len(digits) - len(digits.rstrip("0"))
            if zeros == len(digits):
                zeros = 0
            unit = 10.0 ** zeros
        return unit * (1 + 1e-9)


def _strip_code(text):
    """Backtick spans blanked (same length, so columns stay)."""
    return re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), text)


def _table_cells(row):
    """A table row without its first cell (the row's label), cells blanked."""
    cells = row.strip().strip("|").split("|")
    if len(cells) < 2:
        return ""
    return " | ".join(cells[1:])


def _unit_after(text, end):
    m = re.match(r"\s*([A-Za-z%]+)", text[end:])
    return m.group(1) if m else ""


def _is_wall_time(text, start, end):
    before = text[:start]
    after = text[end:]
    if CORES_AFTER_RE.match(after):
        return True
    if WALL_UNIT_RE.match(after) and re.search(r"(?:in about|about)\s*$", before):
        return True
    if re.match(r"^\s*(?:minutes?|min)\b", after) and re.search(r"about\s*$", before):
        return True
    return False


CONTEXT_STOPWORDS = {"at", "the", "of", "and", "for", "with", "on", "in", "to", "is", "a", "an", "by",
                     "its", "it", "from", "each", "per", "one", "all", "same", "then", "than"}


def _context(body, start, end):
    """Up to two words on each side of a number within its clause (units,
    numbers and small words left out): "8 replicas" -> {"replica"}."""
    def words(text):
        out = []
        for w in re.findall(r"[A-Za-z][A-Za-z0-9_]*", text):
            w = w.lower()
            if w in CONTEXT_STOPWORDS or w in {u.lower() for u in SPACED_UNITS} or w in ATTACHED_UNITS:
                continue
            out.append(w[:-1] if len(w) > 3 and w.endswith("s") else w)
        return out
    before = re.split(r"[;:,()|]", body[:start])[-1]
    after = re.split(r"[;:,()|]", body[end:])[0]
    return tuple(words(before)[-2:] + words(after)[:2])


def quoted_numbers(text, in_table=False):
    """The results a quoted line states, and the numbers it shows that are
    not results (with why), as ([Quoted], [(text, reason)])."""
    skipped = []
    if text.rstrip().endswith(DERIVED_MARK):
        return [], [(text, "derived")]
    body = _table_cells(text) if in_table else text
    body = _strip_code(body)
    found = []
    for m in NUMBER_RE.finditer(body):
        s, e = m.start(), m.end()
        token = m.group("num")
        prev = body[s - 1] if s > 0 else " "
        prev2 = body[s - 2] if s > 1 else " "
        nxt = body[e] if e < len(body) else " "
        attached = re.match(r"[A-Za-z%]*", body[e:]).group(0)
        word_before = re.search(r"[\w]*$", body[:max(s - 1, 0)]).group(0) if prev == "-" else ""
        if prev.isalnum() or prev in "_." or re.search(r"[A-Za-z]", word_before):
            skipped.append((token, "part of a name"))
            continue
        if prev == "=":
            skipped.append((token, "a key's value"))
            continue
        if nxt == "." and e + 1 < len(body) and body[e + 1].isdigit():
            skipped.append((token, "a version"))
            continue
        if prev == "v" or (prev == "." and prev2.isdigit()):
            skipped.append((token, "a version"))
            continue
        if attached not in ATTACHED_UNITS:
            skipped.append((token + attached, "part of a name"))
            continue
        if nxt == "_" or (nxt == "-" and e + 1 < len(body) and body[e + 1].isalpha()):
            skipped.append((token, "part of a name"))
            continue
        if _is_wall_time(body, s, e) or (attached in ("s", "ms") and
                                         re.search(r"(?:in about|about)\s*$", body[:s])):
            skipped.append((token, "a wall-clock time"))
            continue
        if re.match(r"\s*(?:cores?|CPUs?)\b", body[e:]):
            skipped.append((token, "the machine"))
            continue
        tilde = bool(re.search(r"(?:~|about)\s*$", body[:s]))
        digits = token.replace(",", "")
        decimals = len(digits.split(".")[1]) if "." in digits and "e" not in digits.lower() else 0
        unit = attached or _unit_after(body, e)
        if not attached:
            # A range "3.1-4.4 TB" or a list "0.021 / 0.017 ms": the unit
            # written after the last number is each one's.
            r = re.match(r"\s*(?:-|/|to)\s*[\d.,]+\s*([A-Za-z%]+)", body[e:])
            if r:
                unit = r.group(1)
        found.append(Quoted(token, float(digits), decimals, tilde, unit, s, _context(body, s, e)))
    return found, skipped


WALL_UNITS = {"ms": 1e-3, "s": 1.0, "second": 1.0, "seconds": 1.0,
              "min": 60.0, "minute": 60.0, "minutes": 60.0, "hour": 3600.0, "hours": 3600.0}


def wall_seconds(text):
    """The wall-clock times a quoted line states, in seconds ("in about 3 s",
    "about 9 minutes on 2 cores", "about a minute")."""
    seconds = []
    body = _strip_code(text)
    for m in NUMBER_RE.finditer(body):
        s, e = m.start(), m.end()
        unit = re.match(r"\s*([A-Za-z]+)", body[e:])
        if unit and unit.group(1) in WALL_UNITS and (
                _is_wall_time(body, s, e) or re.search(r"(?:in about|about)\s*$", body[:s])):
            seconds.append(float(m.group("num").replace(",", "")) * WALL_UNITS[unit.group(1)])
    for m in re.finditer(r"about an? (minute|hour)\b", body):
        seconds.append(WALL_UNITS[m.group(1)])
    return seconds


def output_values(text):
    """Every number an output text shows (magnitudes), for matching."""
    values = []
    for m in NUMBER_RE.finditer(text):
        try:
            values.append(abs(float(m.group("num").replace(",", ""))))
        except ValueError:
            pass
    return values


class Pool:
    """The numbers one command's output holds, searchable by interval."""

    def __init__(self, values):
        self.values = sorted(v for v in values if math.isfinite(v))

    def holds(self, lo, hi):
        i = bisect.bisect_left(self.values, lo)
        return i < len(self.values) and self.values[i] <= hi

    def matches(self, q):
        tol = q.tolerance()
        scales = [1.0] + SPACED_UNITS.get(q.unit, [])
        for scale in scales:
            # v * scale within [N - tol, N + tol]
            lo = (q.value - tol) / scale
            hi = (q.value + tol) / scale
            if self.holds(min(lo, hi), max(lo, hi)):
                return True
        return False

    def nearest(self, q):
        if not self.values:
            return None
        i = bisect.bisect_left(self.values, q.value)
        near = [self.values[j] for j in (i - 1, i) if 0 <= j < len(self.values)]
        return min(near, key=lambda v: abs(v - q.value))
