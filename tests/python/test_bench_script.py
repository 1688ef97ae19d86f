"""bench/reference_benchmark.py, the script every GPU figure comes from, on the CPU: its
--dry-run (host clock for CUDA events, the CPU backend, small shapes) for suite 2 with both
timing methods, and the order in which the interleaved method takes its samples. Needs torch
(CPU); run with the fast path only (the script does not depend on which path the binding
takes)."""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

import missing

try:
    import torch  # noqa: F401
except ImportError:
    torch = None

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "reference_benchmark.py")


def setUpModule():
    if torch is None:
        missing.tool("torch is not installed (Debian: apt-get install python3-torch)")
    if os.environ.get("KILN_PYTHON_FAST") == "0":
        raise unittest.SkipTest("the benchmark script is checked once, in the fast-path run")


def load_script():
    spec = importlib.util.spec_from_file_location("reference_benchmark", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class Suite2DryRun(unittest.TestCase):
    def run_prefill(self, timing):
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--only", "prefill",
                                "--kiln-tiers", "tensor,generic", "--timing", timing,
                                "--out", out], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            files = [f for f in os.listdir(out) if f.startswith("prefill_") and
                     f.endswith(".json")]
            self.assertEqual(len(files), 1, files)
            with open(os.path.join(out, files[0])) as f:
                return json.load(f)

    def check(self, report, phrase):
        self.assertIn(phrase, report["timing"])
        self.assertGreater(len(report["results"]), 0)
        for row in report["results"]:
            kilns = {n: e for n, e in row["contenders"].items() if n.startswith("kiln")}
            self.assertEqual(sorted(kilns), ["kiln_generic", "kiln_tensor"], row["contenders"])
            for name, e in kilns.items():
                self.assertGreater(e.get("tflops", 0), 0, (name, e))
                self.assertEqual(e["samples"], 5, (name, e))
                self.assertEqual(len(e["samples_s"]), 5, (name, e))
                self.assertEqual(e["dispatch"]["backend"], "cpu", (name, e))

    def test_interleaved(self):
        self.check(self.run_prefill("interleaved"), "each contender's in turn")

    def test_sequential(self):
        self.check(self.run_prefill("sequential"), "one contender after another")


class InterleavedOrder(unittest.TestCase):
    def test_samples_alternate_and_reverse(self):
        rb = load_script()
        rb.Event, rb.sync = rb._HostEvent, (lambda: None)
        log = []

        def contender(name):
            return rb.Contender(name, lambda: log.append(name))

        cs = [contender(n) for n in "abc"]
        res = rb.time_events_interleaved(cs, target_s=1e-9, repeats=4)
        # Each contender: a call before sizing, the sized call (n = 1 at this target), one
        # warm-up call; then one call per sample, forward, backward, forward, backward.
        self.assertEqual("".join(log), "aaabbbccc" + "abc" "cba" "abc" "cba")
        self.assertEqual(sorted(res), ["a", "b", "c"])
        for r in res.values():
            self.assertEqual(r["samples"], 4)
            self.assertEqual(r["calls_per_sample"], 1)


if __name__ == "__main__":
    unittest.main()
