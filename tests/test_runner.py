"""checker.running.runner's pure helpers (grading itself is driven by test_submissions and test_batch)."""
import os
import shutil

from checker.running.runner import Grader, _answer_source, nothing_defined
from checker.spec import load_spec, reference_file


def test_written_answers_of_a_linked_file_are_read_where_it_points_unless_that_is_secret(tmp_path):
    store, secret, entries = tmp_path / "store", tmp_path / "reference", tmp_path / "class"
    for d in (store, secret, entries):
        d.mkdir()
    (store / "alice.py").write_text("# Q3-text\n# each head has its own softmax\n")
    (secret / "attention.py").write_text("# Q3-text\n# the reference's words\n")
    os.symlink(store / "alice.py", entries / "alice.py")
    os.symlink(secret / "attention.py", entries / "mallory.py")
    (entries / "bob.py").write_text("")
    secrets = [str(secret), str(entries)]
    assert _answer_source(str(entries / "alice.py"), secrets) == str(store / "alice.py")
    assert _answer_source(str(entries / "mallory.py"), secrets) == str(entries / "mallory.py")  # not followed
    assert _answer_source(str(entries / "bob.py"), secrets) == str(entries / "bob.py")


def test_nothing_defined_says_what_was_found_and_what_was_asked(tmp_path):
    spec = load_spec("attention")
    assert "defines nothing" in nothing_defined(str(tmp_path / "a.py"), [], spec)
    text = nothing_defined(str(tmp_path / "a.py"), ["foo", "_private", "np"], spec)
    assert "it defines `foo`, `np`" in text and "`get_scores`" in text and "_private" not in text
    (tmp_path / "hw").mkdir()
    assert "the folder hw holds no .py or .ipynb file" in nothing_defined(str(tmp_path / "hw"), [], spec)


EVIL_PLUGIN = '''
import pytest


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem):
    try:
        return (yield)
    except BaseException:  # every failing grading test passes
        return True
'''

GRADE_THREE_TIMES = """
import json, sys
import pytest
from checker.running import runner
sub = sys.argv[1]
scores = []
for reuse in (True, False):  # one pytest session per grader (checker.running.session), and a pytest.main per grade
    with runner.Grader(mode="public", reuse_session=reuse) as g:
        scores.append(g.grade(sub, "attention")["score"])
# as hwcheck graded before: every installed plugin loaded from its entry point
runner.run_pytest = lambda args, plugins: pytest.main(args, plugins=plugins)
with runner.Grader(mode="public", reuse_session=False) as g:
    scores.append(g.grade(sub, "attention")["score"])
    scores.append(g.grade(sub, "attention")["max_score"])
print(json.dumps(scores))
"""


def test_a_pytest_plugin_installed_beside_hwcheck_has_no_say_in_a_grade(tmp_path):
    """A plugin in the TA's environment (here one that makes every failing test pass, installed with an entry
    point as pip would) takes no part in grading; with pytest's autoload, as hwcheck graded before, it forged the
    grade, which shows the plugin really loads there."""
    import json
    import subprocess
    import sys
    site = tmp_path / "site"
    (site / "evilplug-1.0.dist-info").mkdir(parents=True)
    (site / "evilplug.py").write_text(EVIL_PLUGIN)
    (site / "evilplug-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: evilplug\nVersion: 1.0\n")
    (site / "evilplug-1.0.dist-info" / "entry_points.txt").write_text("[pytest11]\nevil = evilplug\n")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    wrong = os.path.join(repo, "assignments", "attention", "examples", "no_scaling.py")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), repo])}
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    p = subprocess.run([sys.executable, "-c", GRADE_THREE_TIMES, wrong], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    score, one_shot, forged, max_score = json.loads(p.stdout.strip().splitlines()[-1])
    assert score == one_shot < max_score
    assert forged > score  # the attack is real where plugins autoload


def test_a_torch_assignments_workers_start_with_the_meta_device_warm(tmp_path):
    """PyTorch imports some 800 modules at a process's first meta-device op (the torch assignments' device
    tests use that device as a GPU's stand-in): the zygote does it once, before it forks a worker of a torch
    assignment, and not for numpy's attention until then; a torch assignment inferred from the names warms
    the zygote for the grades that follow."""
    sub = tmp_path / "probe.py"
    sub.write_text("import sys\nLOADED = len(sys.modules)\n\n\ndef loaded():\n    return LOADED\n")
    with Grader(mode="public") as g:
        h, _, _ = g.open(str(sub), "attention")
        cold = h.call("loaded")
        h.close()
        assert not g.warm_meta and not h.warm_meta
        h, _, _ = g.open(str(sub), "vit")
        warm = h.call("loaded")
        h.close()
        assert h.warm_meta and warm > cold + 100, (cold, warm)
    vit = tmp_path / "vit_hw.py"
    shutil.copy(reference_file(load_spec("vit")), vit)
    with Grader(mode="public") as g:
        h, aid, note = g.open(str(vit), None)
        h.close()
        assert aid == "vit" and "inferred" in note and g.warm_meta
        h, _, _ = g.open(str(sub), "attention")  # the zygote is warm by now: so is every worker it forks
        again = h.call("loaded")
        h.close()
        assert h.warm_meta and again > cold + 100, (cold, again)


def test_a_notebook_saved_under_a_py_name_is_told_so(tmp_path):
    """A notebook renamed to .py runs as Python (a dict of JSON) and defines nothing: the message names what it
    is and what to do, not 'it is empty or holds no code. Did you save your work'."""
    from checker.running.runner import nothing_defined
    from checker.spec import load_spec
    path = tmp_path / "homework.py"
    path.write_text(open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "submissions",
                                      "attention", "correct_notebook.ipynb"), encoding="utf-8").read())
    text = nothing_defined(str(path), [], load_spec("attention"))
    assert "is a Jupyter notebook" in text and "rename it to homework.ipynb" in text, text
    (tmp_path / "empty.py").write_text("# nothing yet\n")
    assert "defines nothing: it is empty" in nothing_defined(str(tmp_path / "empty.py"), [], load_spec("attention"))
