"""Ctrl-C stops a long kvsim.run, compare, hitcurve or sweep within a second or two
and raises KeyboardInterrupt, leaving no worker behind.

Each case runs a child python3 that starts a long command, sends it SIGINT
(as a terminal's Ctrl-C does) once the command has begun, and measures how
long the child takes to stop. Run by ctest with PYTHONPATH at the built
package and KVSIM_SOURCE_DIR at the source tree.
"""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest

SOURCE = os.environ["KVSIM_SOURCE_DIR"]
DEFAULT = os.path.join(SOURCE, "configs", "scenarios", "default.yaml")

CHILD = textwrap.dedent("""
    import os, signal, sys, time
    # A child of a shell's background job may inherit SIGINT ignored;
    # a terminal's python3 has this handler.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import kvsim
    call = sys.argv[1]
    print("started", flush=True)
    start = time.monotonic()
    try:
        eval(call)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(42)
    print("finished after %.1f s" % (time.monotonic() - start), flush=True)
""")

# Each of these takes well over ten seconds on two cores.
LONG_RUN = f"kvsim.run({DEFAULT!r}, ['workload.sessions=200000', 'expect=null'])"
LONG_COMPARE = (f"kvsim.compare({DEFAULT!r}, ['kv_cache.block_size=64,128'], "
                "overrides=['workload.sessions=200000', 'expect=null'])")
LONG_REPLAY = f"kvsim.hitcurve({DEFAULT!r}, [1e5], overrides=['workload.sessions=2000000'])"


def long_sweep(folder):
    path = os.path.join(folder, "long.yaml")
    with open(path, "w") as f:
        f.write(f"name: long\nbase: {DEFAULT}\nset:\n  workload.sessions: 20000\n"
                "grid:\n  kv_cache.block_size: [16, 32, 64, 128, 256, 512]\n")
    return f"kvsim.sweep({path!r}, jobs=2, out={os.path.join(folder, 'out')!r})"


def children_of(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry))
    return found


class Interrupt(unittest.TestCase):
    def interrupt(self, call, wait_for_workers=False):
        child = subprocess.Popen([sys.executable, "-c", CHILD, call], stdout=subprocess.PIPE,
                                 text=True, env=os.environ)
        try:
            self.assertEqual(child.stdout.readline().strip(), "started")
            time.sleep(1.0)  # well into the command
            if wait_for_workers:
                deadline = time.monotonic() + 10
                while not children_of(child.pid) and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.assertTrue(children_of(child.pid), "the sweep started no worker")
            self.assertIsNone(child.poll(), "the command ended before it was interrupted")
            sent = time.monotonic()
            child.send_signal(signal.SIGINT)
            rest = child.communicate(timeout=30)[0]
            took = time.monotonic() - sent
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            child.stdout.close()
        self.assertEqual(child.returncode, 42, rest)
        self.assertIn("interrupted", rest)
        self.assertLess(took, 2.0)
        return took

    def test_a_long_run_stops(self):
        self.interrupt(LONG_RUN)

    def test_a_long_compare_stops(self):
        self.interrupt(LONG_COMPARE)

    def test_a_long_cache_replay_stops(self):
        self.interrupt(LONG_REPLAY)

    def test_a_sweep_stops_with_its_workers(self):
        with tempfile.TemporaryDirectory() as folder:
            self.interrupt(long_sweep(folder), wait_for_workers=True)
            # Workers run `kvsim run` on variant folders: none is left running
            # (their parent is gone, so they would be init's children now).
            time.sleep(0.2)
            leftover = []
            for entry in os.listdir("/proc"):
                if entry.isdigit():
                    try:
                        with open(f"/proc/{entry}/cmdline", "rb") as f:
                            cmdline = f.read().decode(errors="replace")
                    except OSError:
                        continue
                    if folder in cmdline:
                        leftover.append(cmdline)
            self.assertEqual(leftover, [])
            # The sweep did not finish: no sweep.csv was written.
            self.assertFalse(os.path.exists(os.path.join(folder, "out", "sweep.csv")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
