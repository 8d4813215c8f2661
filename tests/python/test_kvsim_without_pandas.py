"""Without pandas the kvsim package returns tables as dicts of columns, typed
as pandas would type them, with the values of the CLI's files.

pandas is hidden from this whole process before kvsim is imported (as on a
python3 without python3-pandas). Run by ctest with PYTHONPATH at the built
package, KVSIM_SOURCE_DIR at the source tree and KVSIM_BINARY at the kvsim
executable.
"""
import sys

sys.modules["pandas"] = None  # `import pandas` raises ImportError from here on

import csv  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import unittest  # noqa: E402

import kvsim  # noqa: E402

SOURCE = os.environ["KVSIM_SOURCE_DIR"]
BINARY = os.environ["KVSIM_BINARY"]
DEFAULT = os.path.join(SOURCE, "configs", "scenarios", "default.yaml")


def cli_rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(line for line in f if not line.startswith("#")))


def same_cell(value, text):
    if text == "":
        return value is None or (isinstance(value, float) and math.isnan(value))
    if isinstance(value, bool):
        return text == ("true" if value else "false")
    if isinstance(value, (int, float)):
        return value == float(text)
    return value == text


class WithoutPandas(unittest.TestCase):
    def test_pandas_is_hidden(self):
        with self.assertRaises(ImportError):
            import pandas  # noqa: F401

    def assert_columns_are_the_file(self, columns, path):
        rows = cli_rows(path)
        self.assertIsInstance(columns, dict)
        self.assertEqual(list(columns), rows[0])
        for i, name in enumerate(rows[0]):
            self.assertIsInstance(columns[name], list)
            self.assertEqual(len(columns[name]), len(rows) - 1)
            for value, row in zip(columns[name], rows[1:]):
                self.assertTrue(same_cell(value, row[i]), (name, value, row[i]))

    def test_run_tables_are_columns_of_the_cli_files(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "cli")
            subprocess.run([BINARY, "run", DEFAULT, "--quiet", "--out", folder, "--set",
                            "workload.sessions=20"], check=True)
            r = kvsim.run(DEFAULT, ["workload.sessions=20"])
            self.assert_columns_are_the_file(r["requests"], os.path.join(folder, "requests.csv"))
            self.assert_columns_are_the_file(r["timeline"], os.path.join(folder, "timeline.csv"))
        requests = r["requests"]
        # Types as pandas.read_csv gives them: whole numbers stay int, a
        # column with an empty cell is float with NaN, text is str.
        self.assertTrue(all(isinstance(v, int) for v in requests["id"]))
        self.assertTrue(all(isinstance(v, float) for v in requests["ttft_ms"]))
        self.assertTrue(all(isinstance(v, str) for v in requests["status"]))
        self.assertEqual(sum(s == "completed" for s in requests["status"]),
                         r["metrics"]["requests"]["completed"])

    def test_study_tables_are_columns_too(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = os.path.join(tmp, "cli")
            subprocess.run([BINARY, "capacity", "--device", "ascend-910b2", "--model",
                            "llama-3-8b", "--tp", "1,3", "--out", folder], check=True,
                           capture_output=True)
            r = kvsim.capacity("ascend-910b2", "llama-3-8b", tp=[1, 3])
            self.assert_columns_are_the_file(r["table"], os.path.join(folder, "capacity.csv"))
        # A column with a missing value in some rows only (the note of an
        # invalid layout) keeps its text and None elsewhere.
        self.assertIn(None, r["table"]["note"])
        self.assertEqual(set(r["table"]["fits"]), {True, False})
        self.assertTrue(any("tensor parallel 3" in (n or "") for n in r["table"]["note"]))
        h = kvsim.hitcurve(DEFAULT, [1e4, 1e5], overrides=["workload.sessions=10"])
        self.assertEqual(h["table"]["capacity_tokens"], [10000, 100000])
        slo = kvsim.capacity("ascend-910b2", "llama-3-8b", context=1024,
                             slo="ttft_p99_ms=1000,tpot_p99_ms=50", workload=DEFAULT,
                             overrides=["workload.sessions=10"])
        self.assertEqual(slo["slo_table"]["device"], ["ascend-910b2"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
