"""bench/reference_benchmark.py, the script every GPU figure comes from, on the CPU: its
--dry-run (host clock for CUDA events, the CPU backend, small shapes) for suites 2, 3 and 5
with both timing methods, suites 2 and 3 narrowed by --prefill-shapes and --decode-shapes,
the order in which the interleaved method takes its samples, each kiln tier's context kept
from sample to sample, that kiln tiers sharing one output buffer are each checked on
their own output, and that bench/decode_trace.py and bench/hopper_trace.py still find the
kernel lines they stamp. Needs torch
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


class SuitesDryRun(unittest.TestCase):
    def run_suites(self, timing):
        with tempfile.TemporaryDirectory() as out:
            r = subprocess.run([sys.executable, SCRIPT, "--dry-run", "--only",
                                "prefill,decode,activation", "--kiln-tiers", "tensor,generic",
                                "--timing", timing, "--out", out],
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            reports = {}
            for suite in ("prefill", "decode", "activation"):
                files = [f for f in os.listdir(out) if f.startswith(suite + "_") and
                         f.endswith(".json")]
                self.assertEqual(len(files), 1, (suite, files))
                with open(os.path.join(out, files[0])) as f:
                    reports[suite] = json.load(f)
            return reports

    def timed_ok(self, name, e):
        self.assertEqual(e["samples"], 5, (name, e))
        self.assertEqual(len(e["samples_s"]), 5, (name, e))
        self.assertGreater(e["median_s"], 0, (name, e))

    def check(self, reports, phrase):
        for report in reports.values():
            self.assertIn(phrase, report["timing"])
            self.assertGreater(len(report["results"]), 0)
        kiln_prefill = ["kiln_generic", "kiln_tensor"]
        kiln_decode = sorted(f"kiln_{t}_{layout}" for t in ("tensor", "generic")
                             for layout in ("dense", "paged16", "paged64"))
        for row in reports["prefill"]["results"]:
            kilns = {n: e for n, e in row["contenders"].items() if n.startswith("kiln")}
            self.assertEqual(sorted(kilns), kiln_prefill, row["contenders"])
            for name, e in kilns.items():
                self.timed_ok(name, e)
                self.assertGreater(e.get("tflops", 0), 0, (name, e))
                self.assertEqual(e["dispatch"]["backend"], "cpu", (name, e))
        for row in reports["decode"]["results"]:
            kilns = {n: e for n, e in row["contenders"].items() if n.startswith("kiln")}
            self.assertEqual(sorted(kilns), kiln_decode, row["contenders"])
            copy = row["contenders"]["copy"]
            self.timed_ok("copy", copy)
            self.assertEqual(copy["bytes_moved"], 2 * row["kv_bytes"])
            for name, e in kilns.items():
                self.timed_ok(name, e)
                self.assertGreater(e["fraction_of_copy"], 0, (name, e))
                self.assertEqual(e["dispatch"]["backend"], "cpu", (name, e))
        act = reports["activation"]["results"][0]["contenders"]
        self.assertEqual(sorted(act), ["device_copy", "kiln_silu_and_mul", "torch_eager"])
        for name, e in act.items():
            self.timed_ok(name, e)
        self.assertLess(act["kiln_silu_and_mul"]["max_abs_error_vs_fp32"], 0.1)

    def test_interleaved(self):
        self.check(self.run_suites("interleaved"), "each contender's in turn")

    def test_sequential(self):
        self.check(self.run_suites("sequential"), "one contender after another")


def report_rows(test, out, suite):
    """The rows of the one report of `suite` a run wrote into `out`."""
    files = [f for f in os.listdir(out) if f.startswith(suite + "_") and f.endswith(".json")]
    test.assertEqual(len(files), 1, files)
    with open(os.path.join(out, files[0])) as f:
        return json.load(f)["results"]


class ShapePairs:
    """A suite narrowed by OPTION to the pairs given, in their order; a malformed pair is an
    error naming the option and the pair."""

    OPTION, SUITE, ARGS, BAD = "", "", [], ()

    def run_script(self, shapes, out):
        return subprocess.run([sys.executable, SCRIPT, "--dry-run", "--only", self.SUITE,
                               *self.ARGS, self.OPTION, shapes, "--out", out],
                              capture_output=True, text=True, timeout=300)

    def rows(self, shapes):
        with tempfile.TemporaryDirectory() as out:
            r = self.run_script(shapes, out)
            self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr[-2000:])
            return report_rows(self, out, self.SUITE)

    def test_malformed(self):
        with tempfile.TemporaryDirectory() as out:
            for bad in self.BAD:
                r = self.run_script(bad, out)
                self.assertNotEqual(r.returncode, 0, bad)
                self.assertIn(self.OPTION, r.stderr, bad)
                self.assertIn(repr(bad), r.stderr, bad)


class DecodeShapes(ShapePairs, unittest.TestCase):
    """--decode-shapes narrows suite 3 (the dry run shrinks each pair to at most batch 2, 256
    keys)."""

    OPTION, SUITE, ARGS = "--decode-shapes", "decode", ["--kiln-tiers", "generic"]
    BAD = ("8x4096", "8:0", "8:4096:1")

    def test_pairs(self):
        rows = self.rows("2:128,1:64")
        self.assertEqual([(row["B"], row["L"]) for row in rows], [(2, 128), (1, 64)])


class PrefillShapes(ShapePairs, unittest.TestCase):
    """--prefill-shapes narrows suite 2 to (head dim, length) pairs, each with and without
    the causal mask (the dry run caps lengths at 128)."""

    OPTION, SUITE = "--prefill-shapes", "prefill"
    ARGS = ["--kiln-tiers", "generic", "--sdpa", "math"]
    BAD = ("64", "64:-1", "a:b")

    def test_pairs(self):
        rows = self.rows("32:64,16:128")
        self.assertEqual([(row["D"], row["S"], row["causal"]) for row in rows],
                         [(32, 64, False), (32, 64, True), (16, 128, False),
                          (16, 128, True)])


class ContextsPerSetting(unittest.TestCase):
    def test_each_setting_keeps_its_context(self):
        # A tier's context is made by its first call and handed back every time that tier is
        # timed again; another setting gets its own; leaving restores what was there before.
        rb = load_script()
        arrays = rb.kiln._arrays
        cpu = rb.kiln._lib.BACKEND_CPU
        outer = arrays.context(cpu, 0)
        with rb._Env({"KILN_GPU_TIER": "tensor"}):
            self.assertEqual(os.environ["KILN_GPU_TIER"], "tensor")
            first = arrays.context(cpu, 0)
            self.assertNotEqual(first, outer)
        self.assertEqual(arrays.context(cpu, 0), outer)
        with rb._Env({"KILN_GPU_TIER": "generic"}):
            other = arrays.context(cpu, 0)
            self.assertNotIn(other, (first, outer))
        for _ in range(3):
            with rb._Env({"KILN_GPU_TIER": "tensor"}):
                self.assertEqual(arrays.context(cpu, 0), first)
            with rb._Env({"KILN_GPU_TIER": "generic"}):
                self.assertEqual(arrays.context(cpu, 0), other)
        self.assertEqual(arrays.context(cpu, 0), outer)


class SharedOutput(unittest.TestCase):
    def test_each_kiln_tier_keeps_its_own_output(self):
        # kiln's contenders of one shape write into one out= buffer; each one's output must be
        # what its own call wrote, not whatever the last tier left there.
        rb = load_script()
        rb.Event, rb.sync = rb._HostEvent, (lambda: None)
        rb.kiln = type("StubKiln", (), {"last_dispatch": staticmethod(lambda: {})})
        buf = torch.zeros(2)

        def writer(value):
            def fn():
                buf.fill_(value)
                return buf
            return fn

        cs = [rb.Contender("kiln_a", writer(1.0)), rb.Contender("kiln_b", writer(2.0))]
        for timing in ("interleaved", "sequential"):
            entries = {}
            outs, live = rb.run_and_time(type("Args", (), {"timing": timing}), cs, entries)
            self.assertEqual([c.name for c in live], ["kiln_a", "kiln_b"])
            self.assertEqual(outs["kiln_a"].tolist(), [1.0, 1.0], timing)
            self.assertEqual(outs["kiln_b"].tolist(), [2.0, 2.0], timing)
            self.assertEqual(entries["kiln_a"]["samples"], 5, timing)


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


class TraceTrees(unittest.TestCase):
    """The trace scripts edit a copy of the kernels at fixed lines: each of those lines must
    still be there once (the scripts stop with the line they missed otherwise)."""

    def check(self, script, kernel, stamp):
        with tempfile.TemporaryDirectory() as d:
            r = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "bench", script),
                                "tree", d], capture_output=True, text=True)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(os.path.join(d, "kernels", kernel)) as f:
                self.assertIn(stamp, f.read())

    def test_decode(self):
        self.check("decode_trace.py", "decode.cu", "TR_REC(1);")

    def test_hopper(self):
        self.check("hopper_trace.py", "attention_hopper.cu", "TR(5);")


if __name__ == "__main__":
    unittest.main()
