"""bench/bench.py still runs against the tree it measures (it is no test, so nothing else would notice):
its in-process stand-in grades each assignment's reference with every grading test passing (a broken
stand-in makes the benchmark refuse to report), and its naive baseline's pytest command really grades."""
import importlib.util
import os
import subprocess

import pytest

from checker.spec import assignment_ids, example_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _bench():
    spec = importlib.util.spec_from_file_location("hwcheck_bench", os.path.join(ROOT, "bench", "bench.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
@pytest.mark.parametrize("aid", assignment_ids())
def test_the_in_process_stand_in_passes_every_grading_test_of_the_reference(aid):
    assert _bench().inprocess_call_time(aid) > 0  # SystemExit, naming the tests, where one fails


@pytest.mark.slow
def test_the_naive_baseline_grades_a_correct_and_a_wrong_submission():
    bench = _bench()
    good = subprocess.run(bench.naive_command("attention", example_path("attention", "correct.py")), cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert good.returncode == 0 and " passed" in good.stdout, good.stdout[-2000:] + good.stderr[-2000:]
    bad = subprocess.run(bench.naive_command("attention", example_path("attention", "no_scaling.py")), cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert bad.returncode == 1 and " failed" in bad.stdout, bad.stdout[-2000:] + bad.stderr[-2000:]
