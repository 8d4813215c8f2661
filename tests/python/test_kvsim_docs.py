"""docs/python.md's worked example runs: its ```python cells, in order, as one
script, in an empty working folder against the built package.

The example reads shared data (../shared/data, in place): where a file it
needs is absent the test is skipped with a message (exit 77, which ctest
reports as skipped). Run by ctest with PYTHONPATH at the built package and
KVSIM_SOURCE_DIR at the source tree.
"""
import os
import re
import subprocess
import sys
import tempfile

SOURCE = os.environ["KVSIM_SOURCE_DIR"]
DOC = os.path.join(SOURCE, "docs", "python.md")
SHARED = os.path.join(SOURCE, "..", "shared", "data")
NEEDED = [os.path.join(SHARED, "calibration", "published_measurements.csv"),
          os.path.join(SHARED, "models", "stories260K", "stories260K.bin"),
          os.path.join(SHARED, "models", "stories260K", "tok512.bin")]
SKIP = 77


def main():
    with open(DOC) as f:
        cells = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    if len(cells) < 5:
        print(f"FAIL: {DOC} has {len(cells)} python cells; the worked example is missing")
        return 1
    absent = [p for p in NEEDED if not os.path.isfile(p)]
    if absent:
        print("SKIP: shared data absent: " + ", ".join(absent))
        return SKIP
    script = "\n".join(cells)
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "python_md_example.py")
        with open(path, "w") as f:
            f.write(script)
        p = subprocess.run([sys.executable, path], cwd=work, capture_output=True, text=True)
        print(p.stdout)
        if p.returncode != 0:
            print(p.stderr)
            print(f"FAIL: docs/python.md's example exited {p.returncode}")
            return 1
        # Only what the example writes itself lands in its working folder.
        left = sorted(os.listdir(work))
        expected = sorted(["python_md_example.py", "dtypes.yaml", "grid.yaml", "grid-out"])
        if left != expected:
            print(f"FAIL: the working folder holds {left}, expected {expected}")
            return 1
    for text in ("TTFT p99", "chosen: ", "file not found", "did you mean 'block_size'"):
        if text not in p.stdout:
            print(f"FAIL: the example printed no {text!r}")
            return 1
    print("ok: docs/python.md's example ran")
    return 0


if __name__ == "__main__":
    sys.exit(main())
