"""The kvsim Python module runs what `kvsim run` runs.

Run by ctest with PYTHONPATH at the built module, KVSIM_SOURCE_DIR at the
source tree and KVSIM_BINARY at the kvsim executable.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import types
import unittest

import kvsim

SOURCE = os.environ["KVSIM_SOURCE_DIR"]
BINARY = os.environ["KVSIM_BINARY"]
DEFAULT = os.path.join(SOURCE, "configs", "scenarios", "default.yaml")


def without_run_specifics(metrics):
    metrics = json.loads(json.dumps(metrics))
    metrics.get("sim", {}).pop("wall_s", None)
    metrics.pop("provenance", None)
    return metrics


class ModuleRuns(unittest.TestCase):
    def test_metrics_match_the_command_line(self):
        with tempfile.TemporaryDirectory() as out:
            folder = os.path.join(out, "run")
            subprocess.run([BINARY, "run", DEFAULT, "--quiet", "--out", folder,
                            "--set", "workload.sessions=40"], check=True)
            with open(os.path.join(folder, "metrics.json")) as f:
                cli = json.load(f)
            with open(os.path.join(folder, "requests.csv")) as f:
                cli_rows = f.read().strip().splitlines()[1:]
        r = kvsim.run(DEFAULT, ["workload.sessions=40"])
        self.assertEqual(without_run_specifics(r["metrics"]), without_run_specifics(cli))
        self.assertEqual(r["metrics"]["provenance"]["overrides"], ["workload.sessions=40"])
        self.assertEqual(len(r["requests"]["id"]), len(cli_rows))
        self.assertEqual(len(r["requests"]["ttft_ms"]), len(cli_rows))
        completed = [t for t, s in zip(r["requests"]["ttft_ms"], r["requests"]["status"])
                     if s == "completed"]
        self.assertEqual(len(completed), r["metrics"]["requests"]["completed"])
        columns = r["timeline"]
        self.assertTrue(len({len(v) for v in columns.values()}) == 1)
        self.assertGreater(len(columns["time_ms"]), 0)

    def test_yaml_text_and_dict_give_the_same_run(self):
        with open(DEFAULT) as f:
            text = f.read()
        a = kvsim.run(text, ["workload.sessions=20"])
        self.assertGreaterEqual(a["metrics"]["requests"]["arrived"], 20)
        scenario = {
            "name": "from-a-dict", "device": "ascend-910b2", "model": "llama-3-8b",
            "workload": {"kind": "synthetic", "requests": 20,
                         "arrival": {"process": "poisson", "rate_per_s": 5},
                         "input_tokens": 256, "output_tokens": 16},
        }
        b = kvsim.run(scenario)
        c = kvsim.run(scenario, ["gpu_memory_utilization=0.5"])
        self.assertEqual(b["metrics"]["requests"]["completed"], 20)
        self.assertLess(c["metrics"]["kv_cache"]["num_blocks"],
                        b["metrics"]["kv_cache"]["num_blocks"])

    def test_bad_input_is_a_value_error_with_its_location(self):
        with self.assertRaises(ValueError) as caught:
            kvsim.run(DEFAULT, ["kv_cache.block_sise=64"])
        self.assertIn("--set kv_cache.block_sise", str(caught.exception))
        self.assertIn("did you mean 'block_size'", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            kvsim.run("name: x\ndevice: ascend-910b2\nmodel: llama-3-8b\nkv_cache: {dtype: fp12}\n")
        self.assertRegex(str(caught.exception), r"<python>:4:\d+: kv_cache.dtype")
        with self.assertRaises(TypeError):
            kvsim.run(42)

    def test_a_failed_expect_is_an_error_as_on_the_command_line(self):
        # `kvsim run` exits 1 when an expectation fails; kvsim.run raises.
        failing = ["expect={requests.completed: {max: 1}}", "workload.sessions=40"]
        with self.assertRaises(kvsim.ExpectFailed) as caught:
            kvsim.run(DEFAULT, failing)
        self.assertIn("expect.requests.completed", str(caught.exception))
        self.assertTrue(issubclass(kvsim.ExpectFailed, AssertionError))
        r = kvsim.run(DEFAULT, failing, check_expect=False)
        self.assertEqual(len(r["expect_failures"]), 1)
        self.assertEqual(kvsim.run(DEFAULT, ["workload.sessions=40"])["expect_failures"], [])

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
            kvsim.run(DEFAULT)
            during = ticks[0] - before
        finally:
            stop.set()
            t.join()
        # With the GIL held for the whole run the counting thread would get
        # only the interpreter's switch slices around the call.
        self.assertGreater(during, 10000)

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


if __name__ == "__main__":
    unittest.main(verbosity=2)
