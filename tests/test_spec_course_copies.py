"""A course's copies of a built-in assignment (checker.spec; the instructor probe h50/h57):

A  the spec's hash covers every file that decides a grade (spec.toml, the test and helper modules, the reference):
   a tolerance edited in a hidden test file made `grade --resume` keep every old scorecard as "up to date";
B  a course folder holding an assignment with a built-in's id: every command naming the id refuses, naming both
   folders (it silently graded with the built-in);
C  the assignment inferred from the names: the course's copy that adds a question beats the built-in it extends
   at 100% each, and the line names the other one (a student who has not written the extra function yet);
D  `grade` refuses a spec that disagrees with its tests before it writes anything (a typo in hidden_tests graded
   the hidden test as a public one; a question marker's typo crashed every student).
"""
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from checker import spec as S
from checker.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ATTENTION = os.path.join(ROOT, "assignments", "attention")
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
MASKED = '''
[[questions]]
id = "Q5"
title = "Masked attention"
points = 10
names = ["masked_attention"]
'''


@pytest.fixture
def course(tmp_path, monkeypatch):
    """make(id): a course's copy of attention under the id (its folder's name), found through HWCHECK_ASSIGNMENTS."""
    folder = tmp_path / "course"
    folder.mkdir()
    monkeypatch.setenv(S.ENV_VAR, str(folder))
    S._entry_point_folders.cache_clear()

    def make(aid, examples=False):
        shutil.copytree(ATTENTION, folder / aid,
                        ignore=shutil.ignore_patterns("__pycache__", *(() if examples else ("examples",))))
        spec = folder / aid / "spec.toml"
        spec.write_text(spec.read_text().replace('id = "attention"', f'id = "{aid}"', 1))
        return folder / aid
    yield make
    S._entry_point_folders.cache_clear()


def _grade(folder, out, aid, *extra, code=0):
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", aid, "-o", str(out), "--timeout", "5", *extra])
    assert r.exit_code == code, r.output
    return r


def _card(out, sid):
    with open(os.path.join(out, f"{sid}.json"), encoding="utf-8") as f:
        return json.load(f)


def _class(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for sid, example in (("alice", "correct.py"), ("bob", "no_scaling.py")):
        shutil.copyfile(os.path.join(EXAMPLES, example), folder / f"{sid}.py")
    return folder


# --------------------------------------------------------------------------- A


def test_the_hash_covers_the_tests_helpers_and_reference_and_nothing_else(course, tmp_path):
    hw = course("hwsha", examples=True)
    base = S.spec_sha256("hwsha")
    assert S.spec_sha256("hwsha") == base
    names = [n for n, _ in S.grading_files("hwsha")]
    assert names == sorted(names) and "spec.toml" in names and "reference.py" in names
    assert {"conftest.py", "_common.py", "_answers.py", "test_attention_q1.py"} <= set(names)
    assert not [n for n in names if n.startswith("examples/") or "__pycache__" in n or not n.endswith((".py", ".toml"))]
    # what plays no part in a grade changes nothing
    for name in ("README.md", "starter.ipynb", os.path.join("examples", "correct.py")):
        with open(hw / name, "a", encoding="utf-8") as f:
            f.write("\n")
    (hw / "__pycache__").mkdir(exist_ok=True)
    (hw / "__pycache__" / "x.py").write_text("x = 1\n")
    assert S.spec_sha256("hwsha") == base
    # each file that decides a grade does
    seen = {base}
    for name in ("test_attention_q4.py", "_common.py", "reference.py", "_answers.py", "conftest.py", "spec.toml"):
        with open(hw / name, "a", encoding="utf-8") as f:
            f.write("\n# edited\n")
        sha = S.spec_sha256("hwsha")
        assert sha not in seen, name
        seen.add(sha)
    # the same files elsewhere (another machine's install: a Dask worker) hash alike
    other = tmp_path / "elsewhere"
    other.mkdir()
    shutil.copytree(hw, other / "hwsha")
    os.environ[S.ENV_VAR] = str(other)
    assert S.spec_sha256("hwsha") == sha


def test_a_reference_outside_the_folder_is_hashed_too(course, tmp_path, monkeypatch):
    hw = course("hwref")
    (hw / "reference.py").rename(tmp_path / "hw1_ref.py")
    spec = hw / "spec.toml"
    spec.write_text('reference = "hw1_ref"\n' + spec.read_text())
    monkeypatch.syspath_prepend(str(tmp_path))
    base = S.spec_sha256("hwref")
    assert ("<reference hw1_ref>", str(tmp_path / "hw1_ref.py")) in S.grading_files("hwref")
    with open(tmp_path / "hw1_ref.py", "a", encoding="utf-8") as f:
        f.write("\n# edited\n")
    assert S.spec_sha256("hwref") != base


def test_resume_regrades_after_a_hidden_test_file_changed_and_says_the_tests_changed(course, tmp_path):
    hw = course("hwres")
    folder, out = _class(tmp_path), tmp_path / "out"
    _grade(folder, out, "hwres")
    seed = _card(out, "alice")["grader"]["seed"]
    before = {sid: _card(out, sid)["grader"]["spec_sha256"] for sid in ("alice", "bob")}
    r = _grade(folder, out, "hwres", "--resume")
    assert "grading tests changed" not in r.output  # nothing changed: nothing regraded
    assert {sid: _card(out, sid)["grader"]["spec_sha256"] for sid in ("alice", "bob")} == before

    # a hidden test's tolerance edited in its test file (spec.toml as it was)
    q1 = hw / "test_attention_q1.py"
    q1.write_text(q1.read_text() + "\n\nHIDDEN_RTOL = 1e-3  # the hidden tests' tolerance, edited\n")
    r = _grade(folder, out, "hwres", "--resume")
    assert "hwres's grading tests changed since 2 of the 2 scorecards" in r.output, r.output
    assert f"the batch's seed {seed}" in r.output and "spec.toml changed" not in r.output, r.output
    after = {sid: _card(out, sid)["grader"] for sid in ("alice", "bob")}
    assert all(g["spec_sha256"] == S.spec_sha256("hwres") != before[sid] for sid, g in after.items())
    assert all(g["seed"] == seed for g in after.values())

    # the reference changed, then --only one student: the line says the rest were graded with the old tests
    with open(hw / "reference.py", "a", encoding="utf-8") as f:
        f.write("\n# edited\n")
    r = _grade(folder, out, "hwres", "--only", "bob")
    warning = next(line for line in r.output.splitlines() if "grading tests changed" in line)
    assert "1 of the 1 scorecards --only keeps were graded with the old ones" in warning, warning


# --------------------------------------------------------------------------- B


def test_a_course_copy_keeping_a_built_in_id_is_refused_naming_both_folders(course, tmp_path):
    dup = course("attention")
    builtin = os.path.join(S.ASSIGNMENTS_DIR, "attention")
    with pytest.raises(S.SpecError) as e:
        S.load_spec("attention")
    assert builtin in str(e.value) and str(dup) in str(e.value) and "rename" in str(e.value)
    assert S.load_spec("vit")["id"] == "vit"  # the others work
    assert any(str(dup) in p and builtin in p for p in S.discovery_problems())
    from checker.running.submission_files import secret_paths  # refused, and kept from workers all the same
    assert {os.path.realpath(dup), os.path.realpath(builtin)} <= set(secret_paths())

    r = CliRunner().invoke(main, ["check", "-a", "attention", os.path.join(EXAMPLES, "correct.py")])
    assert r.exit_code == 2 and builtin in r.output and str(dup) in r.output and "ambiguous" in r.output, r.output
    folder, out = _class(tmp_path), tmp_path / "out"
    r = _grade(folder, out, "attention", code=2)
    assert builtin in r.output and str(dup) in r.output and "rename" in r.output, r.output
    assert not out.exists()

    r = CliRunner().invoke(main, ["list"])
    assert r.exit_code == 0, r.output
    assert any(line.startswith("attention  warning:") and str(dup) in line for line in r.output.splitlines())
    assert "\nvit  " in r.output and "\ncharlm  " in r.output


# --------------------------------------------------------------------------- C


def _names(aid):
    return [n for q in S.load_spec(aid)["questions"] for n in q["names"]]


def test_inference_prefers_the_course_copy_with_more_names_found_and_names_the_near_matches(course):
    hw = course("attnmask")
    spec = hw / "spec.toml"
    spec.write_text(spec.read_text() + MASKED)
    everything = _names("attnmask")
    assert set(_names("attention")) < set(everything)
    assert S.infer_assignment(everything) == ("attnmask", 1.0)
    note = S.inference_note(everything)
    assert note.startswith("assignment inferred from the names defined: attnmask (100% of its names found)")
    assert "also 100% of attention's names: pass -a attention if that is your assignment" in note

    # masked_attention not written yet: attention, but attnmask is named as a near match
    assert S.infer_assignment(_names("attention")) == ("attention", 1.0)
    note = S.inference_note(_names("attention"))
    share = f"{len(_names('attention')) / len(everything):.0%}"
    assert f"also {share} of attnmask's names: pass -a attnmask if that is your assignment" in note, note
    assert "vit" not in note and "charlm" not in note


def test_check_says_the_near_match_in_its_inference_line(course, tmp_path):
    hw = course("attnmask")
    spec = hw / "spec.toml"
    spec.write_text(spec.read_text() + MASKED)
    r = CliRunner().invoke(main, ["check", os.path.join(EXAMPLES, "correct.py"), "--timeout", "5"])
    assert "assignment inferred from the names defined: attention (100% of its names found)" in r.output, r.output
    assert "pass -a attnmask if that is your assignment" in r.output, r.output


# --------------------------------------------------------------------------- D


def test_grade_refuses_a_hidden_tests_typo_before_writing(course, tmp_path):
    hw = course("hwtypo")
    spec = hw / "spec.toml"
    spec.write_text(spec.read_text().replace('"test_context_property"', '"test_context_propety"', 1))
    folder, out = _class(tmp_path), tmp_path / "out"
    r = _grade(folder, out, "hwtypo", code=2)
    assert "hidden_tests names 'test_context_propety'" in r.output and "nothing was written" in r.output, r.output
    assert not out.exists()


def test_grade_refuses_a_question_marker_typo_before_writing_and_keeps_out_as_it_was(course, tmp_path):
    hw = course("hwmark")
    folder, out = _class(tmp_path), tmp_path / "out"
    _grade(folder, out, "hwmark", "--public")
    files = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    q1 = hw / "test_attention_q1.py"
    q1.write_text(q1.read_text().replace('@pytest.mark.question("Q1")', '@pytest.mark.question("Q11")', 1))
    r = _grade(folder, out, "hwmark", "--public", "--resume", code=2)
    assert "is marked for question 'Q11', which the spec does not have" in r.output, r.output
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == files
