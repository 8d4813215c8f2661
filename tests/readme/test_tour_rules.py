#!/usr/bin/python3
"""The README tour's rules on fixed text: which numbers are results, when a
result matches an output value, how a block is read (tests/readme/README.md)."""

import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tour_doc  # noqa: E402
import tour_numbers  # noqa: E402
import tour_run  # noqa: E402


def results(text, in_table=False):
    return [q.text for q in tour_numbers.quoted_numbers(text, in_table)[0]]


def matches(quoted_text, values):
    [q] = tour_numbers.quoted_numbers(quoted_text)[0]
    return tour_numbers.Pool(values).matches(q)


class WhichNumbersAreResults(unittest.TestCase):
    def test_names_are_labels(self):
        self.assertEqual(results("910B2 TP8 p99 fp16 llama-3-8b AR-128 70B Q23t 200GE T9A1-14"), [])

    def test_code_versions_keys_and_wall_times_are_not_results(self):
        self.assertEqual(results("`block_size: 128` v0.15.0 --set parallel.micro_batches=1"), [])
        self.assertEqual(results("0.0014 ... 0.650, in about 3 s"), ["0.0014", "0.650"])
        self.assertEqual(results("about 40 s on 2 cores"), [])
        self.assertEqual(tour_numbers.wall_seconds("about 9 minutes on 2 cores; about a minute"), [540.0, 60.0])

    def test_results_with_units_ranges_and_separators(self):
        found = tour_numbers.quoted_numbers("hit rate 0.113, TTFT p99 9425 ms, 12,031 requests, 3.1-4.4 TB, 1.50x")[0]
        self.assertEqual([(q.text, q.unit) for q in found],
                         [("0.113", ""), ("9425", "ms"), ("12,031", "requests"), ("3.1", "TB"),
                          ("4.4", "TB"), ("1.50", "x")])

    def test_derived_lines_and_table_labels(self):
        self.assertEqual(results("median 30.8% of each device's rows (derived)"), [])
        self.assertEqual(results("| Q1 | snapdragon-8-elite | 23.47 tokens/s | +1.3% |", in_table=True),
                         ["23.47", "1.3"])


class WhenAResultMatches(unittest.TestCase):
    def test_within_the_digits_quoted(self):
        self.assertTrue(matches("0.113", [0.1127]))
        self.assertTrue(matches("0.113", [0.1134]))
        self.assertFalse(matches("0.113", [0.1136]))
        self.assertFalse(matches("38 ms", [38.6]))

    def test_a_tilde_allows_one_unit_of_the_last_significant_digit(self):
        self.assertTrue(matches("~224 ms", [225.0]))
        self.assertFalse(matches("~224 ms", [225.2]))
        self.assertTrue(matches("~1600 ms", [1690.0]))
        self.assertFalse(matches("~1600 ms", [1720.0]))

    def test_a_unit_lets_a_smaller_unit_match(self):
        self.assertTrue(matches("5.6 s", [5576.3]))
        self.assertTrue(matches("16.6 TB", [16.6e12 + 3e10]))
        self.assertTrue(matches("61.02 GiB", [61.02 * 2 ** 30]))
        self.assertTrue(matches("4.5%", [0.0452]))
        self.assertFalse(matches("5.6 s", [5.7]))

    def test_an_input_repeated_is_a_label(self):
        [n] = tour_numbers.quoted_numbers("8 replicas")[0]
        self.assertTrue(tour_run.is_input(n, ["    replica: {count: 8, parallel: {tensor: 1}}"]))
        [n] = tour_numbers.quoted_numbers("8 rejected")[0]
        self.assertFalse(tour_run.is_input(n, ["    replica: {count: 8, parallel: {tensor: 1}}"]))


DOC = """# Title

**Compare.** Text.

```sh
./build/kvsim compare s.yaml \\
    --vary a=1,2   # TTFT 12 ms
#   hit rate 0.5
make run
./build/kvsim run s.yaml --prompt "a##b"   # exit 1
```

| v | ms |
| --- | ---: |
| a | 3.5 |

<!-- tour: tables quote compare -->
## Later

| v | ms |
| --- | ---: |
| b | 7.25 |
"""


class HowABlockIsRead(unittest.TestCase):
    def test_commands_quotes_and_tables(self):
        [block] = tour_doc.parse("doc.md", DOC)
        self.assertEqual(block.name, "compare")
        self.assertEqual([c.text for c in block.commands],
                         ["./build/kvsim compare s.yaml --vary a=1,2", "make run",
                          './build/kvsim run s.yaml --prompt "a##b"'])
        self.assertEqual([q.text for q in block.commands[0].quotes], ["TTFT 12 ms", "hit rate 0.5"])
        self.assertEqual(tour_run.expected_exit(block.commands[2]), 1)
        self.assertFalse(tour_run.runs(block.commands[1]))
        self.assertEqual([q.text for q in block.tables], ["| a | 3.5 |", "| b | 7.25 |"])

    def test_a_marker_naming_no_block_is_an_error(self):
        with self.assertRaises(ValueError):
            tour_doc.parse("doc.md", DOC.replace("quote compare", "quote nothing"))

    def test_the_view_holds_no_output_of_another_block(self):
        with tempfile.TemporaryDirectory() as tmp:
            source = os.path.join(tmp, "tree")
            os.makedirs(os.path.join(source, "configs"))
            os.makedirs(os.path.join(source, "out", "default"))
            kvsim = os.path.join(tmp, "kvsim")
            open(kvsim, "w").close()
            repo = tour_run.make_view(os.path.join(tmp, "work"), source, kvsim)
            self.assertTrue(os.path.islink(os.path.join(repo, "configs")))
            self.assertFalse(os.path.exists(os.path.join(repo, "out")))
            self.assertEqual(os.path.realpath(os.path.join(repo, "build", "kvsim")), os.path.realpath(kvsim))


if __name__ == "__main__":
    unittest.main()
