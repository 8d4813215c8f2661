"""kvsim.run returns what `kvsim run` writes, and fails as it fails.

Run by ctest with PYTHONPATH at the built package, KVSIM_SOURCE_DIR at the
source tree and KVSIM_BINARY at the kvsim executable.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import threading
import types
import unittest

import pandas

import kvsim

SOURCE = os.environ["KVSIM_SOURCE_DIR"]
BINARY = os.environ["KVSIM_BINARY"]
DEFAULT = os.path.join(SOURCE, "configs", "scenarios", "default.yaml")
SMALL = ["workload.sessions=20"]


def without_run_specifics(metrics):
    metrics = json.loads(json.dumps(metrics))
    metrics.get("sim", {}).pop("wall_s", None)
    metrics.pop("provenance", None)
    return metrics


def cli(*args):
    """`kvsim ARGS` as a process: (exit code, stderr)."""
    p = subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stderr


class RunMatchesTheCommandLine(unittest.TestCase):
    def test_metrics_requests_and_timeline_are_the_cli_files(self):
        with tempfile.TemporaryDirectory() as out:
            folder = os.path.join(out, "run")
            subprocess.run([BINARY, "run", DEFAULT, "--quiet", "--out", folder,
                            "--set", "workload.sessions=40"], check=True)
            with open(os.path.join(folder, "metrics.json")) as f:
                metrics = json.load(f)
            requests = pandas.read_csv(os.path.join(folder, "requests.csv"))
            timeline = pandas.read_csv(os.path.join(folder, "timeline.csv"))
        r = kvsim.run(DEFAULT, ["workload.sessions=40"])
        self.assertEqual(without_run_specifics(r["metrics"]), without_run_specifics(metrics))
        self.assertEqual(r["metrics"]["provenance"]["overrides"], ["workload.sessions=40"])
        self.assertIsInstance(r["requests"], pandas.DataFrame)
        pandas.testing.assert_frame_equal(r["requests"], requests)
        pandas.testing.assert_frame_equal(r["timeline"], timeline)
        self.assertEqual(int((r["requests"]["status"] == "completed").sum()),
                         r["metrics"]["requests"]["completed"])
        self.assertIn("name: default", r["resolved_scenario"])
        self.assertIsNone(r["folder"])

    def test_out_keeps_the_run_folder_and_from_runs_it_again(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = pathlib.Path(tmp) / "kept"
            r = kvsim.run(DEFAULT, SMALL, out=out)
            self.assertEqual(r["folder"], str(out))
            for name in ("metrics.json", "requests.csv", "timeline.csv", "report.md",
                         "report.html", "scenario.resolved.yaml"):
                self.assertTrue((out / name).is_file(), name)
            again = kvsim.run(from_=out / "metrics.json")
            self.assertEqual(without_run_specifics(again["metrics"]),
                             without_run_specifics(r["metrics"]))
            # The folder is kvsim's now; a user's folder is refused as the CLI refuses it.
            mine = pathlib.Path(tmp) / "mine"
            mine.mkdir()
            (mine / "notes.txt").write_text("mine")
            code, err = cli("run", DEFAULT, "--quiet", "--out", mine, "--set", SMALL[0])
            with self.assertRaises(kvsim.InputError) as caught:
                kvsim.run(DEFAULT, SMALL, out=mine)
            self.assertEqual(code, 2)
            self.assertEqual(err.strip(), "kvsim: error: " + str(caught.exception))
            self.assertEqual(caught.exception.exit_code, 2)
            self.assertEqual((mine / "notes.txt").read_text(), "mine")

    def test_nothing_is_written_without_out(self):
        with tempfile.TemporaryDirectory() as tmp:
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                kvsim.run(DEFAULT, SMALL)
            finally:
                os.chdir(cwd)
            self.assertEqual(os.listdir(tmp), [])

    def test_yaml_text_and_dict_give_the_same_run(self):
        with open(DEFAULT) as f:
            text = f.read()
        a = kvsim.run(text, SMALL)
        self.assertGreaterEqual(a["metrics"]["requests"]["arrived"], 20)
        scenario = {
            "name": "from-a-dict", "device": "ascend-910b2", "model": "llama-3-8b",
            "workload": {"kind": "synthetic", "requests": 20,
                         "arrival": {"process": "poisson", "rate_per_s": 5},
                         "input_tokens": 256, "output_tokens": 16},
        }
        b = kvsim.run(scenario)
        c = kvsim.run(scenario, {"gpu_memory_utilization": 0.5})
        self.assertEqual(b["metrics"]["requests"]["completed"], 20)
        self.assertEqual(len(b["requests"]), 20)
        self.assertLess(c["metrics"]["kv_cache"]["num_blocks"],
                        b["metrics"]["kv_cache"]["num_blocks"])


class PathsAndErrors(unittest.TestCase):
    def test_a_path_is_str_or_pathlike(self):
        a = kvsim.run(pathlib.Path(DEFAULT), SMALL)
        b = kvsim.run(DEFAULT, SMALL)
        self.assertEqual(without_run_specifics(a["metrics"]), without_run_specifics(b["metrics"]))
        with self.assertRaises(TypeError):
            kvsim.run(42)

    def test_a_misspelt_path_names_the_path_as_the_cli_does(self):
        # Before, a one-line string naming no file was read as YAML text:
        # "device: is required but missing", "expected a map of keys".
        wrong = os.path.join(SOURCE, "configs", "scenarios", "defualt.yaml")
        code, err = cli("run", wrong, "--quiet")
        for given in (wrong, pathlib.Path(wrong), "configs/scenarios/defualt.yaml"):
            with self.assertRaises(kvsim.ConfigError) as caught:
                kvsim.run(given)
            message = str(caught.exception)
            self.assertEqual(message, f"{os.fspath(given)}:0:0: file not found")
            self.assertNotIn("required but missing", message)
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), f"kvsim: error: {wrong}:0:0: file not found")

    def test_bad_input_is_a_config_error_with_the_cli_message(self):
        code, err = cli("run", DEFAULT, "--quiet", "--set", "kv_cache.block_sise=64")
        with self.assertRaises(ValueError) as caught:
            kvsim.run(DEFAULT, ["kv_cache.block_sise=64"])
        e = caught.exception
        self.assertIsInstance(e, kvsim.ConfigError)
        self.assertIsInstance(e, kvsim.InputError)
        self.assertIsInstance(e, kvsim.Error)
        self.assertEqual(code, 2)
        self.assertEqual(e.exit_code, 2)
        self.assertEqual(err, e.stderr)
        self.assertEqual(err.strip(), "kvsim: error: " + str(e))
        self.assertIn("did you mean 'block_size'", str(e))
        self.assertEqual(e.diagnostics[0]["key_path"], "kv_cache.block_sise")
        self.assertEqual(e.diagnostics[0]["file"], "--set kv_cache.block_sise")
        with self.assertRaises(kvsim.ConfigError) as caught:
            kvsim.run("name: x\ndevice: ascend-910b2\nmodel: llama-3-8b\nkv_cache: {dtype: fp12}\n")
        self.assertRegex(str(caught.exception), r"<python>:4:\d+: kv_cache.dtype")

    def test_a_failed_expect_is_an_assertion_error_as_the_cli_exits_1(self):
        failing = ["expect={requests.completed: {max: 1}}", "workload.sessions=40"]
        with tempfile.TemporaryDirectory() as tmp:
            code, err = cli("run", DEFAULT, "--quiet", "--out", os.path.join(tmp, "x"),
                            *sum((["--set", s] for s in failing), []))
        with self.assertRaises(kvsim.ExpectFailed) as caught:
            kvsim.run(DEFAULT, failing)
        self.assertEqual(code, 1)
        self.assertTrue(issubclass(kvsim.ExpectFailed, AssertionError))
        self.assertIn("expect.requests.completed", str(caught.exception))
        self.assertEqual(["kvsim: expect failed: " + f for f in caught.exception.failures],
                         err.strip().splitlines())
        r = kvsim.run(DEFAULT, failing, check_expect=False)
        self.assertEqual(len(r["expect_failures"]), 1)
        # The run itself is there, as the CLI's folder is.
        self.assertEqual(caught.exception.result["metrics"]["requests"],
                         r["metrics"]["requests"])
        self.assertEqual(kvsim.run(DEFAULT, SMALL)["expect_failures"], [])

    def test_an_option_out_of_range_is_the_cli_parse_error(self):
        code, err = cli("capacity", "--device", "ascend-910b2", "--model", "llama-3-8b",
                        "--block-size", "0")
        with self.assertRaises(kvsim.InputError) as caught:
            kvsim.capacity("ascend-910b2", "llama-3-8b", block_size=0)
        self.assertNotIsInstance(caught.exception, kvsim.ConfigError)
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), "kvsim: error: " + str(caught.exception))


class RunsReleaseTheGil(unittest.TestCase):
    def test_a_run_releases_the_gil(self):
        ticks = [0]
        stop = threading.Event()

        def count():
            while not stop.is_set():
                ticks[0] += 1

        t = threading.Thread(target=count, daemon=True)
        t.start()
        try:
            before = ticks[0]
            kvsim.run(DEFAULT, ["workload.sessions=200"])
            during = ticks[0] - before
        finally:
            stop.set()
            t.join()
        # With the GIL held for the whole run the counting thread would get
        # only the interpreter's switch slices around the call.
        self.assertGreater(during, 10000)


class Readme(unittest.TestCase):
    def test_readme_example_runs(self):
        with open(os.path.join(SOURCE, "README.md")) as f:
            readme = f.read()
        blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
        example = [b for b in blocks if "import kvsim" in b]
        self.assertTrue(example, "README has no Python example importing kvsim")
        calls = []
        plt = types.ModuleType("matplotlib.pyplot")
        plt.__getattr__ = lambda name: (lambda *a, **k: calls.append(name))
        mpl = types.ModuleType("matplotlib")
        mpl.pyplot = plt
        saved = {k: sys.modules.get(k) for k in ("matplotlib", "matplotlib.pyplot")}
        sys.modules["matplotlib"] = mpl
        sys.modules["matplotlib.pyplot"] = plt
        cwd = os.getcwd()
        try:
            os.chdir(SOURCE)
            exec(compile(example[0], "README.md", "exec"), {})
        finally:
            os.chdir(cwd)
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        self.assertIn("plot", calls)

    def test_every_function_has_a_docstring(self):
        for name in kvsim.__all__:
            self.assertTrue((getattr(kvsim, name).__doc__ or "").strip(), name)
        for name in ("run", "compare", "capacity", "sweep", "search", "calibrate", "hitcurve",
                     "generate"):
            self.assertIn("Returns", getattr(kvsim, name).__doc__, name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
