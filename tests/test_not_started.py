"""Issue 18's smaller items, through the real CLI on real submissions: a question still at the starter's
stubs says "not started" (check, show, results.json), `--min-score` says whether it was reached and the
most the automatic tests can give, `--ci` runs that reach it print notices, and `show -v` exists.

The untouched starters are assignments/<id>/starter.ipynb; partly started submissions are the reference
with some of its functions put back to a stub (`raise NotImplementedError`, as the starter has them).
"""
import json
import os
import re

import pytest
from click.testing import CliRunner

import checker.running.runner
from checker.cli import main
from checker.render.gradescope import make_results
from checker.judging.scorecard import validate
from checker.spec import assignment_dir, assignment_ids, load_spec, reference_file
from checker.spec import example_path as example

# totals, question ids and the functions each question grades are read from the spec, never written here: adding
# a question to an assignment leaves these tests as they are (issue 29)
SPEC = load_spec("attention")
AUTO = [q for q in SPEC["questions"] if not q.get("manual")]


def points(x):
    return f"{x:g}"


def question_of(name):
    """attention's question that grades the function `name`."""
    return next(q for q in SPEC["questions"] if name in q["names"])


def starter(aid):
    return os.path.join(assignment_dir(aid), "starter.ipynb")




@pytest.fixture(scope="module")
def zygote():
    from checker.running.sandbox import Zygote
    z = Zygote()
    yield z
    z.close()


@pytest.fixture
def warm(monkeypatch, zygote):
    real = checker.running.runner.Grader
    monkeypatch.setattr(checker.running.runner, "Grader", lambda **kw: real(**{"zygote": zygote, **kw}))  # unless given one


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def stubbed(tmp_path, name, stubs, extra=""):
    """The attention reference with the functions `stubs` put back to the starter's stub."""
    src = open(reference_file(SPEC), encoding="utf-8").read()
    src += "\n\n" + "".join(f"def {f}(*args, **kwargs):\n    raise NotImplementedError({f!r})\n\n" for f in stubs)
    path = tmp_path / name
    path.write_text(src + extra, encoding="utf-8")
    return path


def auto_questions(card):
    return [q for q in card["questions"] if not q["manual"]]


@pytest.mark.parametrize("aid", [a for a in assignment_ids() if os.path.isfile(starter(a))])
def test_the_untouched_starter_is_not_started_in_check_show_and_results_json(warm, aid, tmp_path):
    card_file = tmp_path / "card.json"
    r = run("check", starter(aid), "--json", card_file)
    assert r.exit_code == 1, r.output
    card = json.loads(card_file.read_text())
    validate(card)
    for q in auto_questions(card):
        assert q.get("not_started") is True, q["id"]
        assert q["message"].startswith("Not started: ") and "NotImplementedError" in q["message"]
        assert f"{q['id']}  0/" in r.output
    assert "Not started: every question" in r.output
    # the failures are folded into that one line: no test listed, no hint
    assert not re.search(r"^\s+(ERROR|FAILED) test_", r.output, re.M), r.output
    assert "Likely mistake" not in r.output and "also failed the same way" not in r.output
    assert r.output.count("Not started: ") == len(auto_questions(card)) + 1

    shown = run("show", card_file)
    assert shown.exit_code == 0 and shown.output == r.output.split("\n--min-score")[0]

    results = make_results(card)  # what `grade` writes as gradescope/<id>/results.json
    assert "Not started: " in results["output"]
    for test in results["tests"]:
        if test["status"] == "failed":
            assert test["output"].startswith("Not started: "), test


def test_grade_writes_not_started_into_results_json(tmp_path):
    d = tmp_path / "subs"
    d.mkdir()
    (d / "alice.ipynb").write_bytes(open(starter("attention"), "rb").read())
    out = tmp_path / "out"
    r = run("grade", d, "-a", "attention", "-o", out)
    assert r.exit_code == 0, r.output
    card = json.loads((out / "alice.json").read_text())
    assert all(q.get("not_started") for q in auto_questions(card))
    results = json.loads((out / "gradescope" / "alice" / "results.json").read_text())
    assert results["output"].count("Not started: ") == len(auto_questions(card))
    assert "Likely mistake" not in json.dumps(results)


def test_only_the_questions_still_at_their_stubs_are_not_started(warm, tmp_path):
    q1, q2, q3 = (question_of(f)["id"] for f in ("scale_scores", "self_attention", "multi_head_attention"))
    heads = question_of("multi_head_attention")["names"]
    # q1: one function written (wrongly: no scaling), the others still stubs; q3: all stubs
    path = stubbed(tmp_path, "partly.py", [f for f in question_of("scale_scores")["names"] if f != "scale_scores"]
                   + heads, extra="def scale_scores(scores, n):\n    return scores\n")
    card_file = tmp_path / "card.json"
    r = run("check", path, "-a", "attention", "--json", card_file)
    card = json.loads(card_file.read_text())
    validate(card)
    by_id = {q["id"]: q for q in card["questions"]}
    assert by_id[q3].get("not_started") is True
    assert all(f"`{f}`" in by_id[q3]["message"] for f in heads)
    assert not by_id[q1].get("not_started")  # scale_scores is started: its failures keep their hints
    # q2 is written, but calls the softmax, still a stub: it is started (its failures name the softmax's stub)
    assert not by_id[q2].get("not_started")
    order = [q["id"] for q in card["questions"]]
    q1_text = r.output.split(f"\n{order[order.index(q1) + 1]} ")[0]
    assert "FAILED test_scale_scores" in q1_text or "ERROR test_scale_scores" in q1_text, q1_text
    assert "Not started" not in q1_text
    q3_text = r.output.split(f"\n{q3} ")[1]
    if order.index(q3) + 1 < len(order):
        q3_text = q3_text.split(f"\n{order[order.index(q3) + 1]} ")[0]
    assert q3_text.lstrip().split("\n")[1].strip().startswith(f"Not started: `{heads[0]}`")
    assert "Not started: every question" not in r.output


def test_a_question_with_one_function_written_right_is_started(warm, tmp_path):
    path = stubbed(tmp_path, "one_left.py", ["scale_scores"])
    card_file = tmp_path / "card.json"
    run("check", path, "-a", "attention", "--json", card_file)
    card = json.loads(card_file.read_text())
    assert not any(q.get("not_started") for q in card["questions"])
    q = next(q for q in card["questions"] if q["id"] == question_of("scale_scores")["id"])
    assert 0 < q["score"] < q["max_score"]


def test_min_score_says_whether_it_was_reached_and_the_most_automatic_points(warm, tmp_path):
    auto = sum(q["points"] for q in AUTO)
    manual = sum(q["points"] for q in SPEC["questions"]) - auto
    heads = question_of("multi_head_attention")
    kept = auto - heads["points"]  # every question right but the heads, still at their stubs
    between, above, below = points((kept + auto) // 2), points(auto + 5), points(kept // 2)
    path = stubbed(tmp_path, "no_heads.py", heads["names"])
    r = run("check", path, "-a", "attention", "--min-score", between)
    assert r.exit_code == 1
    last = r.output.rstrip().split("\n")[-1]
    assert last == (f"--min-score {between} not reached: the score is {points(kept)}; the most the automatic tests "
                    f"can give is {points(auto)} (the other {points(manual)} points are graded by a person).")
    r = run("check", path, "-a", "attention", "--min-score", above)
    assert r.exit_code == 1 and r.output.rstrip().endswith(f"so no submission can reach {above} here.")
    r = run("check", path, "-a", "attention", "--min-score", below)
    assert r.exit_code == 0 and r.output.rstrip().split("\n")[-1] == \
        f"--min-score {below} reached: the score is {points(kept)}."
    r = run("check", path, "-a", "attention", "--min-score", below, "--json", "-")
    assert r.exit_code == 0 and json.loads(r.stdout)["score"] == kept  # stdout stays JSON
    assert f"--min-score {below} reached" in r.stderr


def test_ci_runs_that_reach_min_score_print_notices_not_errors(warm, tmp_path):
    path = stubbed(tmp_path, "no_heads.py", ["split_heads", "multi_head_attention"])
    summary = tmp_path / "summary.md"
    auto = sum(q["points"] for q in AUTO)
    below = points((auto - question_of("multi_head_attention")["points"]) // 2)
    r = run("check", path, "-a", "attention", "--ci", "--min-score", below, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.exit_code == 0, r.output
    annotations = [line for line in r.output.split("\n") if line.startswith("::")]
    assert annotations and all(line.startswith("::notice ") for line in annotations), annotations
    assert f"--min-score {below} reached" in annotations[0]
    assert f"--min-score {below} reached" in summary.read_text()
    r = run("check", path, "-a", "attention", "--ci", "--min-score", points(auto + 5))
    assert r.exit_code == 1
    annotations = [line for line in r.output.split("\n") if line.startswith("::")]
    assert annotations and all(line.startswith("::error ") for line in annotations), annotations
    assert "not reached" in annotations[0] and f"the most the automatic tests can give is {points(auto)}" in annotations[0]
    r = run("check", path, "-a", "attention", "--ci")  # without --min-score: failures are errors
    assert r.exit_code == 1 and all(line.startswith("::error ") for line in r.output.split("\n")
                                    if line.startswith("::"))


def test_show_v_and_check_v_show_each_variant_the_grouped_output_points_to(warm, tmp_path):
    sub = example("attention", "no_scaling.py")
    card_file = tmp_path / "card.json"
    r = run("check", sub, "--json", card_file)
    assert "; -v shows each)" in r.output
    grouped = re.search(r"same test with other inputs: (\[[^\]]+\])", r.output).group(1)
    for args in (["check", sub, "-v"], ["show", card_file, "-v"], ["show", card_file, "--verbose"]):
        verbose = run(*args)
        assert verbose.exit_code in (0, 1), verbose.output
        assert "-v shows each" not in verbose.output
        assert re.search(r"(FAILED|ERROR) test_\w+" + re.escape(grouped), verbose.output), (args, verbose.output)
        assert "passed test_" in verbose.output
    assert "hidden]" not in run("show", card_file, "-v").output  # -v is still the student's view


def test_a_folder_holding_only_an_archive_is_told_to_hand_in_the_files(tmp_path):
    """A Gradescope upload of hw.zip: the folder holds no .py or .ipynb file, and the message said only that;
    it names the archive, which the grader does not unpack."""
    import zipfile
    from checker.running.runner import nothing_defined
    from checker.spec import load_spec
    folder = tmp_path / "submission"
    folder.mkdir()
    with zipfile.ZipFile(folder / "hw.zip", "w") as z:
        z.writestr("hw.py", "def get_scores(m, v):\n    return m @ v\n")
    text = nothing_defined(str(folder), [], load_spec("attention"))
    assert "only the archive hw.zip" in text and "not an archive" in text, text
    (folder / "hw.zip").unlink()
    assert "archive" not in nothing_defined(str(folder), [], load_spec("attention"))
