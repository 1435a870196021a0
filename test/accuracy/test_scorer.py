#!/usr/bin/env python3
"""test_scorer.py: unit.accuracy_scorer, the verdict rules of
scripts/accuracy.py on made-up truth lines and reports, and its exit codes
end to end with a stand-in build folder (a `cudaspy` that runs the command,
a `cudaspy-analyze` that prints a canned report). No recording, no timing.
"""
import importlib.util
import io
import json
import os
import stat
import sys
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

HERE = os.path.dirname(os.path.abspath(__file__))
SCORER = os.path.join(HERE, "..", "..", "scripts", "accuracy.py")
spec = importlib.util.spec_from_file_location("accuracy", SCORER)
acc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(acc)

S = 1000000000


def finding(cause, sev, impact_s, pct):
    return {"cause": cause, "severity": sev, "impact_ns": int(impact_s * S), "impact_pct": pct}


def truth(planted, truth_s, loop_s=2.0, **kw):
    t = {"planted": planted, "truth_ns": int(truth_s * S), "loop_ns": int(loop_s * S),
         "steps": 100, "setup_ns": 0, "gpu_ns": 0}
    t.update(kw)
    return t


def case(planted, **kw):
    c = {"case": "c", "cmd": ["x"], "planted": planted}
    c.update(kw)
    return c


class Judge(unittest.TestCase):
    def test_planted_on_top_within_tolerance_passes(self):
        an = {"chains": [finding("data_pipeline_starvation", "HIGH", 1.1, 55)]}
        row = acc.judge(case("data_pipeline_starvation"),
                        truth("data_pipeline_starvation", 1.0), an)
        self.assertEqual(row["reasons"], [])
        self.assertAlmostEqual(row["errors"][0], 10.0)

    def test_other_cause_on_top_fails(self):
        an = {"chains": [finding("sync_per_iteration", "HIGH", 1.0, 50),
                         finding("host_bound", "MEDIUM", 0.9, 45)]}
        row = acc.judge(case("host_bound"), truth("host_bound", 0.9), an)
        self.assertEqual(row["reasons"], ["top cause sync_per_iteration, not host_bound"])

    def test_impact_off_by_more_than_tolerance_fails(self):
        an = {"chains": [finding("alloc_churn", "HIGH", 0.7, 35)]}
        row = acc.judge(case("alloc_churn"), truth("alloc_churn", 1.0), an)
        self.assertEqual(row["reasons"], ["alloc_churn impact 0.70 s, truth 1.00 s (-30 %)"])
        row = acc.judge(case("alloc_churn", tolerance_pct=35), truth("alloc_churn", 1.0), an)
        self.assertEqual(row["reasons"], [])

    def test_loop_slack_accepts_small_truths(self):
        an = {"chains": [finding("io_wait", "MEDIUM", 0.07, 3.5)]}
        row = acc.judge(case("io_wait"), truth("io_wait", 0.05), an)
        self.assertEqual(len(row["reasons"]), 1)
        row = acc.judge(case("io_wait", tolerance_loop_pct=2), truth("io_wait", 0.05), an)
        self.assertEqual(row["reasons"], [])

    def test_impacts_of_one_cause_add_up(self):
        an = {"chains": [finding("host_bound", "HIGH", 0.5, 25),
                         finding("host_bound", "HIGH", 0.5, 25)]}
        row = acc.judge(case("host_bound"), truth("host_bound", 1.0), an)
        self.assertEqual(row["reasons"], [])

    def test_low_finding_without_impact_is_not_top(self):
        an = {"chains": [finding("gpu_bound", "LOW", 0, 0),
                         finding("launch_bound", "HIGH", 1.0, 50)]}
        row = acc.judge(case("launch_bound"), truth("launch_bound", 1.0), an)
        self.assertEqual(row["top_cause"], "launch_bound")
        self.assertEqual(row["reasons"], [])

    def test_missing_planted_finding_fails(self):
        an = {"chains": [finding("data_pipeline_starvation", "HIGH", 1.0, 50)]}
        row = acc.judge(case("worker_startup"), truth("worker_startup", 1.0), an)
        self.assertIn("no worker_startup finding (truth 1.00 s)", row["reasons"])
        self.assertEqual(row["errors"], [-100.0])

    def test_impact_pct_over_100_fails(self):
        an = {"chains": [finding("io_wait", "HIGH", 1.0, 60),
                         finding("host_bound", "HIGH", 0.9, 45)]}
        row = acc.judge(case("io_wait"), truth("io_wait", 1.0), an)
        self.assertEqual(row["reasons"], ["impact_pct sums to 105.0 %"])

    def test_healthy_takes_low_findings_only(self):
        low = {"chains": [finding("gpu_bound", "LOW", 0, 0),
                          finding("cpu_contention_external", "LOW", 0.02, 1)]}
        self.assertEqual(acc.judge(case("none"), truth("none", 0), low)["reasons"], [])
        med = {"chains": [finding("sync_per_iteration", "MEDIUM", 0.1, 5)]}
        row = acc.judge(case("none"), truth("none", 0, runq_ns=3000000), med)
        self.assertEqual(row["reasons"], ["finding sync_per_iteration MEDIUM in a healthy case "
                                          "(main thread's run-queue delay in the loop: 3 ms)"])

    def test_metered_outside_load_is_no_false_finding(self):
        an = {"chains": [finding("cpu_contention_external", "MEDIUM", 0.11, 7)]}
        t = truth("none", 0, runq_ns=int(0.08 * S), setup_runq_ns=int(0.01 * S))
        self.assertEqual(len(acc.judge(case("none"), t, an)["reasons"]), 1)
        self.assertEqual(acc.judge(case("none", external_ok=True), t, an)["reasons"], [])
        an["chains"][0]["impact_ns"] = int(0.2 * S)
        self.assertEqual(len(acc.judge(case("none", external_ok=True), t, an)["reasons"]), 1)
        an = {"chains": [finding("sync_per_iteration", "MEDIUM", 0.05, 3)]}
        self.assertEqual(len(acc.judge(case("none", external_ok=True), t, an)["reasons"]), 1)

    def test_setup_prefers_account_then_steps(self):
        t = truth("setup", 1.0, setup_ns=1 * S)
        an = {"chains": [], "account": {"setup_ns": int(1.1 * S)},
              "steps": {"setup": {"dur_ns": int(0.5 * S)}}}
        self.assertEqual(acc.judge(case("setup"), t, an)["reasons"], [])
        del an["account"]
        self.assertEqual(acc.judge(case("setup"), t, an)["reasons"],
                         ["set-up 0.50 s, truth 1.00 s (-50 %)"])
        self.assertEqual(acc.judge(case("setup"), t, {"chains": []})["reasons"],
                         ["the report has no set-up (account.setup_ns, steps.setup)"])

    def test_several_causes_each_judged(self):
        t = truth("data_pipeline_starvation", 0.8, causes=[
            {"planted": "data_pipeline_starvation", "truth_ns": int(0.8 * S)},
            {"planted": "pageable_memcpy", "truth_ns": int(0.4 * S)}])
        an = {"chains": [finding("pageable_memcpy", "HIGH", 0.42, 21),
                         finding("data_pipeline_starvation", "HIGH", 0.75, 37)]}
        self.assertEqual(acc.judge(case("data_pipeline_starvation"), t, an)["reasons"], [])
        an["chains"][0]["impact_ns"] = int(0.1 * S)
        self.assertEqual(acc.judge(case("data_pipeline_starvation"), t, an)["reasons"],
                         ["pageable_memcpy impact 0.10 s, truth 0.40 s (-75 %)"])

    def test_counts_as_merges_causes(self):
        t = truth("cpu_contention_tree", 1.0)
        an = {"chains": [finding("cpu_contention_external", "HIGH", 0.6, 30),
                         finding("cpu_contention_tree", "HIGH", 0.45, 22)]}
        self.assertEqual(len(acc.judge(case("cpu_contention_tree"), t, an)["reasons"]), 2)
        c = case("cpu_contention_tree",
                 counts_as={"cpu_contention_external": "cpu_contention_tree"})
        self.assertEqual(acc.judge(c, t, an)["reasons"], [])

    def test_manifest_and_workload_must_agree(self):
        an = {"chains": [finding("io_wait", "HIGH", 1.0, 50)]}
        row = acc.judge(case("io_wait"), truth("host_bound", 1.0), an)
        self.assertIn("the workload planted host_bound, the manifest says io_wait", row["reasons"])


class Parse(unittest.TestCase):
    def test_last_truth_line_wins(self):
        out = "x\ncudaspy-truth: %s\ny\ncudaspy-truth: %s\n" % (
            json.dumps(truth("none", 0)), json.dumps(truth("io_wait", 1.0)))
        self.assertEqual(acc.truth_of(out, "w")["planted"], "io_wait")
        with self.assertRaises(acc.RunError):
            acc.truth_of("no line\n", "w")

    def test_placeholders_expand_everywhere(self):
        c = acc.expand({"cmd": ["{build}/w", "{python}"], "env": {"A": "{repo}/x"}, "n": 3},
                       {"build": "/b", "repo": "/r", "python": "py"})
        self.assertEqual(c, {"cmd": ["/b/w", "py"], "env": {"A": "/r/x"}, "n": 3})

    def test_bad_manifests_are_usage_errors(self):
        for bad in ([{"case": "a", "cmd": ["x"], "planted": "p", "truth": "ab"}],
                    [{"case": "a", "cmd": [], "planted": "p"}],
                    [{"case": "a", "cmd": ["x"], "planted": "p"}] * 2, {"case": "a"}):
            with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
                json.dump(bad, f)
                f.flush()
                with self.assertRaises(acc.UsageError):
                    acc.load_manifest(f.name, {}, [])


FAKE_CUDASPY = """#!/bin/sh
# stand-in: cudaspy record [opts] -o RUN -- CMD...: run CMD, touch RUN
while [ "$1" != "--" ]; do [ "$1" = "-o" ] && run=$2; shift; done
shift
: >"$run"
exec "$@"
"""
FAKE_ANALYZE = """#!/bin/sh
cat "$ACC_TEST_REPORT"
"""


class EndToEnd(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        d = self.tmp.name
        for name, text in (("cudaspy", FAKE_CUDASPY), ("cudaspy-analyze", FAKE_ANALYZE)):
            p = os.path.join(d, name)
            with open(p, "w") as f:
                f.write(text)
            os.chmod(p, stat.S_IRWXU)
        self.report = os.path.join(d, "report.json")
        os.environ["ACC_TEST_REPORT"] = self.report

    def tearDown(self):
        self.tmp.cleanup()

    def score(self, cases, chains, *extra):
        d = self.tmp.name
        with open(os.path.join(d, "m.json"), "w") as f:
            json.dump(cases, f)
        with open(self.report, "w") as f:
            json.dump({"chains": chains}, f)
        out, err = io.StringIO(), io.StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            try:
                rc = acc.main(["--build", d, "--manifest", os.path.join(d, "m.json"),
                               "--summary", os.path.join(d, "s.json")] + list(extra))
            except SystemExit as e:
                rc = e.code
        return rc, out.getvalue()

    def workload(self, planted, truth_s):
        line = "cudaspy-truth: " + json.dumps(truth(planted, truth_s))
        return ["sh", "-c", "echo '%s'" % line]

    def test_pass_fail_and_summary(self):
        c = {"case": "w", "cmd": self.workload("io_wait", 1.0), "planted": "io_wait"}
        rc, out = self.score([c], [finding("io_wait", "HIGH", 1.05, 52)], "--count", "2")
        self.assertEqual(rc, 0, out)
        with open(os.path.join(self.tmp.name, "s.json")) as f:
            row = json.load(f)[0]
        self.assertEqual((row["case"], row["verdict"], row["top_cause"]), ("w", "PASS", "io_wait"))
        self.assertAlmostEqual(row["truth_impact_pct"], 50.0)
        rc, out = self.score([c], [finding("host_bound", "HIGH", 1.0, 50)])
        self.assertEqual(rc, 1)
        self.assertIn("w: run 1: top cause host_bound, not io_wait", out)

    def test_ab_truth_is_the_loop_difference(self):
        with_ = "cudaspy-truth: " + json.dumps(truth("sync_per_iteration", 0, loop_s=2.0))
        without = "cudaspy-truth: " + json.dumps(truth("sync_per_iteration", 0, loop_s=1.2))
        c = {"case": "ab", "cmd": ["sh", "-c", "echo '%s'" % with_],
             "cmd_without": ["sh", "-c", "echo '%s'" % without],
             "planted": "sync_per_iteration", "truth": "ab", "shield": True}
        rc, out = self.score([c], [finding("sync_per_iteration", "HIGH", 0.8, 40)])
        self.assertEqual(rc, 0, out)
        rc, out = self.score([c], [finding("sync_per_iteration", "HIGH", 0.5, 25)])
        self.assertIn("sync_per_iteration impact 0.50 s, truth 0.80 s (-38 %)", out)

    def test_ab_truth_leaves_out_run_queue_delay(self):
        with_ = "cudaspy-truth: " + json.dumps(
            truth("sync_per_iteration", 0, loop_s=2.0, runq_ns=int(0.3 * S)))
        without = "cudaspy-truth: " + json.dumps(
            truth("sync_per_iteration", 0, loop_s=1.2, runq_ns=int(0.1 * S)))
        c = {"case": "ab", "cmd": ["sh", "-c", "echo '%s'" % with_],
             "cmd_without": ["sh", "-c", "echo '%s'" % without],
             "planted": "sync_per_iteration", "truth": "ab"}
        rc, out = self.score([c], [finding("sync_per_iteration", "HIGH", 0.6, 30)])
        self.assertEqual(rc, 0, out)

    def test_exit_77_skips_a_case(self):
        c = {"case": "s", "cmd": ["sh", "-c", "exit 77"], "planted": "io_wait"}
        rc, out = self.score([c], [])
        self.assertEqual(rc, 0, out)
        self.assertIn("SKIP", out)

    def test_unknown_case_is_a_usage_error(self):
        c = {"case": "w", "cmd": self.workload("io_wait", 1.0), "planted": "io_wait"}
        rc, _ = self.score([c], [], "--cases", "nope")
        self.assertEqual(rc, 2)


if __name__ == "__main__":
    unittest.main()
