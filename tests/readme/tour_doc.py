"""The shell blocks of a Markdown document and the results they quote.

A block is a fenced ```sh (or bash, shell) block. Its commands are the lines
that are not comments, joined over trailing backslashes, with a heredoc's
body (`<<'EOF'` ... `EOF`) kept as part of its command. What a command
quotes is the comment on its own last line plus the comment lines directly
under it (up to the next command or the end of the block). A Markdown table
that follows the block with only blank lines between quotes the block (all
its commands' outputs), and so do the tables after a marker
`<!-- tour: tables quote BLOCK -->`, up to the next shell block. A block's
name is the document's heading or the bold lead-in (`**Compare.**`) it sits
under, in three words.
"""

import re
import shlex

FENCE_RE = re.compile(r"^(\s*)```+\s*([\w+-]*)")
SHELL_LANGS = {"sh", "bash", "shell", "console"}
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LEAD_RE = re.compile(r"^\*\*([^*]+?)\*\*")
# `<!-- tour: tables quote BLOCK -->`: the tables after it, up to the next
# shell block, quote BLOCK's commands (one marker for a study's tables that
# sit under headings of their own, away from its block).
MARKER_RE = re.compile(r"^\s*<!--\s*tour:\s*tables quote\s+(\S+)\s*-->")
HEREDOC_RE = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")


class Quote:
    """One line of text a command quotes: where it is and what it says."""

    def __init__(self, line, text, in_table=False):
        self.line = line
        self.text = text
        self.in_table = in_table


class Command:
    def __init__(self, line, text, heredoc=""):
        self.line = line          # first line of the command in its document
        self.text = text          # the command, continuation lines joined
        self.heredoc = heredoc    # the heredoc's body, lines joined by \n
        self.quotes = []          # Quote, in document order

    def argv(self):
        try:
            return shlex.split(self.text)
        except ValueError as e:
            raise SystemExit(f"readme tour: line {self.line}: cannot split the command into words: {e}")

    def shell_text(self):
        if not self.heredoc:
            return self.text
        return self.text + "\n" + self.heredoc


class Block:
    def __init__(self, doc, line, section):
        self.doc = doc
        self.line = line
        self.section = section
        self.name = ""            # unique within the document, set by parse()
        self.commands = []
        self.tables = []          # Quote rows of tables quoting the whole block


def split_comment(line):
    """(code, comment) of one shell line: `#` starts a comment at the start of
    a word outside quotes (so `"a##b"` and `x#y` are code)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                continue
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip(), line[i + 1:].strip()
    return line.rstrip(), ""


STOPWORDS = {"a", "an", "the", "and", "of", "in", "on", "s", "to"}


def slug(text):
    """A heading's first three words that say something: `Tiers and a
    global pool` -> tiers-global-pool."""
    text = re.sub(r"[`*_]", "", text).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", text) if w and w not in STOPWORDS]
    return "-".join(words[:3]) or "block"


def _table_rows(lines, start):
    """The lines of the Markdown table starting at or after `start` (only
    blank lines between), with their 1-based line numbers."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    rows = []
    while i < len(lines) and lines[i].lstrip().startswith("|"):
        rows.append((i + 1, lines[i]))
        i += 1
    return rows


def _parse_block(doc, start_line, section, body):
    block = Block(doc, start_line, section)
    current = None
    pending = ""
    pending_line = 0
    i = 0
    while i < len(body):
        raw = body[i]
        line_no = start_line + 1 + i
        i += 1
        stripped = raw.strip()
        if not pending and stripped.startswith("#"):
            if current is not None:
                current.quotes.append(Quote(line_no, stripped.lstrip("#").strip()))
            continue
        if not stripped and not pending:
            continue
        code, comment = split_comment(raw)
        if code.endswith("\\"):
            if not pending:
                pending_line = line_no
            pending += code[:-1].strip() + " "
            continue
        text = (pending + code.strip()).strip()
        first = pending_line if pending else line_no
        pending = ""
        heredoc = ""
        m = HEREDOC_RE.search(text)
        if m:
            end = m.group(2)
            body_lines = []
            while i < len(body) and body[i].strip() != end:
                body_lines.append(body[i])
                i += 1
            body_lines.append(end)
            i += 1
            heredoc = "\n".join(body_lines)
        current = Command(first, text, heredoc)
        if comment:
            current.quotes.append(Quote(line_no, comment))
        block.commands.append(current)
    return block


def parse(doc_name, text):
    """Every shell block of a document, each named uniquely."""
    lines = text.split("\n")
    blocks = []
    marked = []
    marker = None
    heading = ""
    lead = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = FENCE_RE.match(line)
        if fence:
            lang = fence.group(2).lower()
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            if lang in SHELL_LANGS:
                section = lead or heading
                block = _parse_block(doc_name, i + 1, section, lines[i + 1:j])
                rows = _table_rows(lines, j + 1)
                if block.commands and rows:
                    # A table right under a block quotes it; the header row
                    # and the separator are labels.
                    block.tables += [Quote(n, row, in_table=True) for n, row in rows[2:]]
                    j = rows[-1][0] - 1
                blocks.append(block)
                marker = None
            i = j + 1
            continue
        m = MARKER_RE.match(line)
        if m:
            marker = (m.group(1), i + 1)
        elif marker and line.lstrip().startswith("|"):
            rows = _table_rows(lines, i)
            marked.append((marker, [Quote(n, row, in_table=True) for n, row in rows[2:]]))
            i = rows[-1][0]
            continue
        h = HEADING_RE.match(line)
        if h:
            heading = h.group(2)
            lead = ""
        else:
            m = LEAD_RE.match(line)
            if m and (i == 0 or not lines[i - 1].strip()):
                lead = m.group(1).rstrip(".")
        i += 1
    seen = {}
    for block in blocks:
        base = slug(block.section)
        seen[base] = seen.get(base, 0) + 1
        block.name = base if seen[base] == 1 else f"{base}-{seen[base]}"
    # The first of several blocks under one name is `-1` once a second exists.
    for block in blocks:
        if seen.get(block.name, 0) > 1:
            block.name += "-1"
    by_name = {b.name: b for b in blocks}
    for (name, line_no), rows in marked:
        if name not in by_name:
            raise ValueError(f"{doc_name}:{line_no}: the marker names block '{name}'; "
                             f"blocks: {', '.join(by_name)}")
        by_name[name].tables += rows
    return blocks
