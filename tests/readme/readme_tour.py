#!/usr/bin/python3
"""The README is a test: its tour's commands run, and the numbers they quote
are held to what the commands print and write (tests/readme/README.md).

  readme_tour.py list DOC...                     the blocks, their commands and quoted numbers
  readme_tour.py cmake --source DIR DOC...       NAME|DOC|QUOTED_WALL_SECONDS per block, for CMake
  readme_tour.py run --source DIR --kvsim BIN --work DIR DOC BLOCK
  readme_tour.py mutate --source DIR --kvsim BIN --work DIR --old X --new Y [--fail-line-offset K] DOC BLOCK
      runs BLOCK of a copy of DOC with X (found once in DOC) replaced by Y,
      and passes only when the check then fails at X's line (or K lines
      below it): a test of the test

Exit codes: 0 pass, 1 a command's exit or a quoted number disagrees with
its output, 2 bad use, 77 skipped (../shared/data is absent).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tour_doc  # noqa: E402
import tour_numbers  # noqa: E402
import tour_run  # noqa: E402


def load(path, text=None):
    if text is None:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    return tour_doc.parse(os.path.basename(path), text)


def find_block(blocks, name):
    for b in blocks:
        if b.name == name:
            return b
    names = ", ".join(b.name for b in blocks)
    sys.stderr.write(f"readme tour: no block '{name}' (blocks: {names})\n")
    sys.exit(2)


def cmd_list(args):
    total_cmds = total_numbers = 0
    for doc in args.docs:
        for b in load(doc):
            print(f"== {b.doc}:{b.line} [{b.name}] {b.section}")
            for c in b.commands:
                ran = tour_run.runs(c)
                total_cmds += ran
                print(f"  {'run ' if ran else 'skip'} {c.line}: {c.text[:110]}")
                for q in c.quotes:
                    nums, skipped = tour_numbers.quoted_numbers(tour_run.EXIT_RE.sub("exit _", q.text),
                                                                q.in_table)
                    if ran:
                        total_numbers += len(nums)
                    shown = " ".join(("~" if n.tilde else "") + n.text + (n.unit and f"[{n.unit}]")
                                     for n in nums)
                    print(f"       {q.line}: {shown or '-'}"
                          + (f"   (not results: {tour_run._describe_skips(skipped)})" if skipped else ""))
            if b.tables and any(tour_run.runs(c) for c in b.commands):
                for q in b.tables:
                    nums, _ = tour_numbers.quoted_numbers(q.text, True)
                    total_numbers += len(nums)
                print(f"       {b.tables[0].line}-{b.tables[-1].line}: "
                      f"{len(b.tables)} table rows quoting the block")
    print(f"{total_cmds} commands run, {total_numbers} quoted numbers checked")
    return 0


def cmd_cmake(args):
    for doc in args.docs:
        for b in load(doc):
            if any(tour_run.runs(c) for c in b.commands):
                print(f"{b.name}|{os.path.abspath(doc)}|{int(tour_run.quoted_wall_seconds(b))}")
    return 0


def _run(args, block):
    shared = os.path.join(os.path.dirname(os.path.abspath(args.source)), "shared", "data")
    if tour_run.needs_shared_data(block, args.source) and not os.path.isdir(shared):
        print(f"skipped: {block.doc} [{block.name}] needs ../shared/data, which is absent")
        return tour_run.SKIP, None
    code, stats = tour_run.run_block(block, args.source, args.kvsim, args.work)
    print(f"{block.doc} [{block.name}]: {stats['commands']} commands in {stats['seconds']:.1f} s, "
          f"{stats['numbers']} quoted numbers, {stats['mismatches']} disagree, "
          f"{stats['weak']} weak (an edit of the last digit by 2 would still match)")
    return code, stats


def cmd_run(args):
    code, _ = _run(args, find_block(load(args.doc), args.block))
    if code == 0:
        # What a passing block wrote is kept only while it is looked at: a
        # failing block's folder stays for its output to be read.
        tour_run.remove_view(args.work)
    return code


def cmd_mutate(args):
    with open(args.doc, encoding="utf-8") as f:
        text = f.read()
    if text.count(args.old) != 1:
        sys.stderr.write(f"readme tour: {args.doc} holds '{args.old}' {text.count(args.old)} times, "
                         "not once\n")
        return 2
    line = text[:text.index(args.old)].count("\n") + 1
    want = line + args.fail_line_offset
    print(f"mutated {os.path.basename(args.doc)}:{line}: '{args.old}' -> '{args.new}'")
    block = find_block(load(args.doc, text.replace(args.old, args.new)), args.block)
    messages = []
    code, stats = _run_capturing(args, block, messages)
    if code == tour_run.SKIP:
        return code
    tour_run.remove_view(args.work)
    caught = [m for m in messages if m.lstrip().startswith(f"FAIL {block.doc}:{want}:")]
    for m in caught:
        print("caught:" + m)
    if code == 1 and caught:
        print(f"pass: the edited README fails its check at line {want}")
        return 0
    print(f"FAIL: the check of the edited README exited {code} without a failure at line {want}:")
    print("\n".join(messages))
    return 1


def _run_capturing(args, block, messages):
    shared = os.path.join(os.path.dirname(os.path.abspath(args.source)), "shared", "data")
    if tour_run.needs_shared_data(block, args.source) and not os.path.isdir(shared):
        print(f"skipped: {block.doc} [{block.name}] needs ../shared/data, which is absent")
        return tour_run.SKIP, None
    return tour_run.run_block(block, args.source, args.kvsim, args.work, out=messages.append)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("list")
    s.add_argument("docs", nargs="+")
    s = sub.add_parser("cmake")
    s.add_argument("--source", required=True)
    s.add_argument("docs", nargs="+")
    for name in ("run", "mutate"):
        s = sub.add_parser(name)
        s.add_argument("--source", required=True)
        s.add_argument("--kvsim", required=True)
        s.add_argument("--work", required=True)
        if name == "mutate":
            s.add_argument("--fail-line-offset", type=int, default=0,
                           help="the failure expected is this many lines below the edit")
            s.add_argument("--old", required=True)
            s.add_argument("--new", required=True)
        s.add_argument("doc")
        s.add_argument("block")
    args = p.parse_args()
    return {"list": cmd_list, "cmake": cmd_cmake, "run": cmd_run, "mutate": cmd_mutate}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
