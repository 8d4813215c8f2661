"""kvsim.compare, capacity, sweep, search, calibrate, hitcurve and generate
return what the commands of the same name write (or print), and fail with
their messages.

Run by ctest with PYTHONPATH at the built package, KVSIM_SOURCE_DIR at the
source tree and KVSIM_BINARY at the kvsim executable.
"""
import json
import os
import pathlib
import subprocess
import tempfile
import unittest

import pandas

import kvsim

SOURCE = os.environ["KVSIM_SOURCE_DIR"]
BINARY = os.environ["KVSIM_BINARY"]
DEFAULT = os.path.join(SOURCE, "configs", "scenarios", "default.yaml")
SHARED = os.path.join(SOURCE, "..", "shared", "data")
MEASUREMENTS = os.path.join(SHARED, "calibration", "published_measurements.csv")
STORIES = os.path.join(SHARED, "models", "stories260K", "stories260K.bin")


def cli(*args):
    """`kvsim ARGS` as a process: (exit code, stdout, stderr)."""
    p = subprocess.run([BINARY, *map(str, args)], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def cli_table(folder, name):
    with open(os.path.join(folder, name)) as f:
        lines = [line for line in f if not line.startswith("#")]
    import io
    return pandas.read_csv(io.StringIO("".join(lines)))


def cli_json(folder, name):
    with open(os.path.join(folder, name)) as f:
        return json.load(f)


class Studies(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = pathlib.Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_compare_is_the_cli_compare(self):
        folder = self.dir / "cli"
        code, _, _ = cli("compare", DEFAULT, "--quiet", "--out", folder, "--vary",
                         "kv_cache.block_size=64,128", "--set", "workload.sessions=20")
        self.assertEqual(code, 0)
        r = kvsim.compare(pathlib.Path(DEFAULT), {"kv_cache.block_size": [64, 128]},
                          overrides={"workload.sessions": 20})
        pandas.testing.assert_frame_equal(r["table"], cli_table(folder, "compare.csv"))
        self.assertEqual(r["compare.json"], cli_json(folder, "compare.json"))
        self.assertEqual([run["label"] for run in r["runs"]], list(r["table"]["variant"]))
        first = r["compare.json"]["variants"][0]
        pandas.testing.assert_frame_equal(r["runs"][0]["requests"],
                                          cli_table(folder / first["folder"], "requests.csv"))
        self.assertEqual(r["runs"][1]["metrics"]["kv_cache"]["block_size"], 128)
        # Named variants and the strings of the command line give the same grid.
        named = kvsim.compare(DEFAULT, variants={"small": {"kv_cache.block_size": 64},
                                                 "large": ["kv_cache.block_size=128"]},
                              overrides=["workload.sessions=20"])
        self.assertEqual(list(named["table"]["variant"]), ["small", "large"])
        self.assertEqual(list(named["table"]["latency_ms.ttft.p99"]),
                         list(r["table"]["latency_ms.ttft.p99"]))

    def test_compare_errors_are_the_cli_errors(self):
        code, _, err = cli("compare", DEFAULT, "--quiet")
        with self.assertRaises(kvsim.ConfigError) as caught:
            kvsim.compare(DEFAULT)
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), "kvsim: error: " + str(caught.exception))

    def test_capacity_is_the_cli_capacity_with_rows_for_invalid_layouts(self):
        folder = self.dir / "cli"
        code, _, _ = cli("capacity", "--device", "ascend-910b2", "--model", "llama-3-8b",
                         "--tp", "1,3", "--kv-dtype", "fp16,int8", "--out", folder)
        self.assertEqual(code, 0)
        r = kvsim.capacity("ascend-910b2", ["llama-3-8b"], tp=[1, 3], kv_dtype=["fp16", "int8"])
        pandas.testing.assert_frame_equal(r["table"], cli_table(folder, "capacity.csv"))
        self.assertEqual(r["capacity.json"], cli_json(folder, "capacity.json"))
        with open(folder / "capacity.md") as f:
            self.assertEqual(r["capacity.md"], f.read())
        invalid = r["table"][r["table"]["tp"] == 3]
        self.assertEqual(len(invalid), 6)
        self.assertFalse(invalid["fits"].any())
        self.assertTrue(invalid["note"].str.contains("tensor parallel 3").all())
        self.assertIsNone(r["slo_table"])

    def test_capacity_with_an_slo_returns_its_searches(self):
        folder = self.dir / "cli"
        args = ["--device", "ascend-910b2", "--model", "llama-3-8b", "--context", "1024",
                "--slo", "ttft_p99_ms=1000,tpot_p99_ms=50", "--workload", DEFAULT, "--set",
                "workload.sessions=10"]
        code, _, _ = cli("capacity", *args, "--out", folder)
        self.assertEqual(code, 0)
        r = kvsim.capacity("ascend-910b2", "llama-3-8b", context=1024,
                           slo={"ttft_p99_ms": 1000, "tpot_p99_ms": 50},
                           workload=pathlib.Path(DEFAULT), overrides=["workload.sessions=10"])
        self.assertEqual(r["slo.json"], cli_json(folder, "slo.json"))
        self.assertEqual(list(r["slo_table"]["max_rate_per_s"]),
                         [s["max_rate_per_s"] for s in r["slo.json"]["searches"]])
        # A flag check of the command itself (it prints and exits 2).
        code, _, err = cli("capacity", "--device", "ascend-910b2", "--model", "llama-3-8b",
                           "--slo", "ttft_p99_ms=5")
        with self.assertRaises(kvsim.InputError) as caught:
            kvsim.capacity("ascend-910b2", "llama-3-8b", slo="ttft_p99_ms=5")
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), "kvsim: error: " + str(caught.exception))

    def sweep_file(self, name, extra):
        path = self.dir / f"{name}.yaml"
        path.write_text(f"name: {name}\nbase: {DEFAULT}\nset:\n  workload.sessions: 10\n"
                        + extra)
        return path

    def test_sweep_is_the_cli_sweep(self):
        path = self.sweep_file("py-sweep", "grid:\n  kv_cache.block_size: [64, 128]\n"
                               "  kv_cache.dtype: [fp16, int8]\n")
        folder = self.dir / "cli"
        code, _, _ = cli("sweep", path, "--quiet", "--jobs", "2", "--out", folder)
        self.assertEqual(code, 0)
        r = kvsim.sweep(path, jobs=2)
        pandas.testing.assert_frame_equal(r["table"], cli_table(folder, "sweep.csv"))
        self.assertEqual(list(r["table"]["status"]), ["ok"] * 4)
        self.assertIn("sweep.json", r)
        with self.assertRaises(ValueError):
            kvsim.sweep(path, resume=True)

    def test_search_is_the_cli_search(self):
        path = self.sweep_file("py-search", "grid:\n  kv_cache.dtype: [fp16, int8]\n"
                               "search:\n  rates: [2, 4]\n  target_rate_per_s: 8\n"
                               "  slo: {ttft_p99_ms: 1000, tpot_p99_ms: 50}\n"
                               "  objective: least_devices\n")
        folder = self.dir / "cli"
        code, _, _ = cli("search", path, "--quiet", "--jobs", "2", "--out", folder)
        self.assertEqual(code, 0)
        r = kvsim.search(path, jobs=2)
        pandas.testing.assert_frame_equal(r["table"], cli_table(folder, "search.csv"))
        self.assertEqual(r["chosen"], cli_json(folder, "search.json")["chosen"])
        self.assertIsNotNone(r["chosen"])
        # A sweep file without `search:` is refused as the command refuses it.
        plain = self.sweep_file("py-plain", "grid:\n  kv_cache.dtype: [fp16, int8]\n")
        code, _, err = cli("search", plain, "--quiet")
        with self.assertRaises(kvsim.ConfigError) as caught:
            kvsim.search(plain)
        self.assertEqual(code, 2)
        self.assertEqual(err.strip(), "kvsim: error: " + str(caught.exception))

    def test_hitcurve_is_the_cli_hitcurve(self):
        folder = self.dir / "cli"
        code, _, _ = cli("hitcurve", DEFAULT, "--capacity-tokens", "1e4,1e5", "--set",
                         "workload.sessions=20", "--out", folder)
        self.assertEqual(code, 0)
        r = kvsim.hitcurve(DEFAULT, [1e4, 100000], overrides=["workload.sessions=20"])
        pandas.testing.assert_frame_equal(r["table"], cli_table(folder, "hitcurve.csv"))
        self.assertEqual(r["hitcurve.json"], cli_json(folder, "hitcurve.json"))
        self.assertEqual(list(r["table"]["capacity_tokens"]), [10000, 100000])
        code, _, err = cli("hitcurve", DEFAULT, "--capacity-tokens", "0.5")
        with self.assertRaises(kvsim.ConfigError) as caught:
            kvsim.hitcurve(DEFAULT, 0.5)
        self.assertEqual(err.strip(), "kvsim: error: " + str(caught.exception))

    def test_calibrate_is_the_cli_calibrate(self):
        if not os.path.isfile(MEASUREMENTS):
            self.skipTest(f"shared data absent: {MEASUREMENTS}")
        folder = self.dir / "cli"
        code, _, _ = cli("calibrate", MEASUREMENTS, "--out", folder)
        self.assertEqual(code, 0)
        r = kvsim.calibrate(pathlib.Path(MEASUREMENTS))
        pandas.testing.assert_frame_equal(r["table"], cli_table(folder, "calibration.csv"))
        self.assertEqual(r["calibration.json"], cli_json(folder, "calibration.json"))

    def test_generate_is_what_the_cli_prints(self):
        if not os.path.isfile(STORIES):
            self.skipTest(f"shared data absent: {STORIES}")
        code, out, _ = cli("generate", "--prompt", "Once upon a time", "--steps", "40",
                           "--policy", "chunk_lru")
        self.assertEqual(code, 0)
        r = kvsim.generate("Once upon a time", steps=40, policy="chunk_lru")
        self.assertEqual(r["stdout"], out)
        self.assertTrue(out.startswith(r["text"] + "\nchunk reuse vs full prefill"))
        self.assertTrue(r["text"].startswith("Once upon a time"))
        self.assertEqual(len(r["chunk_reuse"]), 5)
        self.assertEqual(list(r["chunk_reuse"]["option"])[:2], ["isolated", "system_prompt"])
        plain = kvsim.generate("Once upon a time", steps=40)
        self.assertIsNone(plain["chunk_reuse"])
        self.assertEqual(plain["text"], r["text"])
        self.assertIsNone(plain["window"])
        code, out, _ = cli("generate", "--steps", "256", "--policy", "sliding_window",
                           "--update-mode", "smart_mask", "--window", "64", "--ctx-size", "128")
        self.assertEqual(code, 0)
        w = kvsim.generate(steps=256, policy="sliding_window", update_mode="smart_mask",
                           window=64, ctx_size=128)
        self.assertEqual(w["stdout"], out)
        self.assertTrue(w["window"].startswith("sliding window: 64 tokens kept over smart_mask"))
        self.assertIn("top-1 agrees at every one", w["window"])
        self.assertEqual(out, w["text"] + "\n" + w["window"] + "\n")
        reset = kvsim.generate(steps=256, policy="smart_mask", ctx_size=128, context_reset=True)
        self.assertTrue(reset["window"].startswith("context reset: 2 resets"))
        code, _, err = cli("generate", "--checkpoint", self.dir / "none.bin")
        with self.assertRaises(kvsim.InputError) as caught:
            kvsim.generate(checkpoint=self.dir / "none.bin")
        self.assertEqual(code, 2)
        self.assertIn(str(self.dir / "none.bin"), str(caught.exception))
        self.assertEqual(err.strip(), "kvsim: error: " + str(caught.exception))

    def test_out_keeps_a_study_folder(self):
        out = self.dir / "kept"
        r = kvsim.hitcurve(DEFAULT, 1e4, overrides=["workload.sessions=10"], out=out)
        self.assertEqual(r["folder"], str(out))
        self.assertTrue((out / "hitcurve.html").is_file())


if __name__ == "__main__":
    unittest.main(verbosity=2)
