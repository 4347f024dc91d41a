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

import checker.runner
from checker.cli import main
from checker.gradescope import make_results
from checker.scorecard import validate
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def starter(aid):
    return os.path.join(ROOT, "assignments", aid, "starter.ipynb")


@pytest.fixture(scope="module")
def zygote():
    from checker.sandbox import Zygote
    z = Zygote()
    yield z
    z.close()


@pytest.fixture
def warm(monkeypatch, zygote):
    real = checker.runner.Grader
    monkeypatch.setattr(checker.runner, "Grader", lambda **kw: real(zygote=zygote, **kw))


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


def stubbed(tmp_path, name, stubs, extra=""):
    """The attention reference with the functions `stubs` put back to the starter's stub."""
    src = open(os.path.join(ROOT, "reference", "attention.py"), encoding="utf-8").read()
    src += "\n\n" + "".join(f"def {f}(*args, **kwargs):\n    raise NotImplementedError({f!r})\n\n" for f in stubs)
    path = tmp_path / name
    path.write_text(src + extra, encoding="utf-8")
    return path


def auto_questions(card):
    return [q for q in card["questions"] if not q["manual"]]


@pytest.mark.parametrize("aid", ["attention", "vit", "charlm"])
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
    assert results["output"].count("Not started: ") == 3
    assert "Likely mistake" not in json.dumps(results)


def test_only_the_questions_still_at_their_stubs_are_not_started(warm, tmp_path):
    q3 = ["split_heads", "head_weight_shape", "head_output_shape", "concat_shape", "w_o_shape",
          "multi_head_attention"]
    # Q1: one function written (wrongly: no scaling), the others still stubs; Q3: all stubs
    path = stubbed(tmp_path, "partly.py", ["get_scores", "get_attention_weights", "get_context_vector",
                                           "context_vector"] + q3,
                   extra="def scale_scores(scores, n):\n    return scores\n")
    card_file = tmp_path / "card.json"
    r = run("check", path, "-a", "attention", "--json", card_file)
    card = json.loads(card_file.read_text())
    validate(card)
    by_id = {q["id"]: q for q in card["questions"]}
    assert by_id["Q3"].get("not_started") is True
    assert all(f"`{f}`" in by_id["Q3"]["message"] for f in q3)
    assert not by_id["Q1"].get("not_started")  # scale_scores is started: its failures keep their hints
    # Q2 is written, but calls the softmax, still a stub: it is started (its failures name the softmax's stub)
    assert not by_id["Q2"].get("not_started")
    q1_text = r.output.split("\nQ2 ")[0]
    assert "FAILED test_scale_scores" in q1_text or "ERROR test_scale_scores" in q1_text, q1_text
    assert "Not started" not in q1_text
    q3_text = r.output.split("\nQ3 ")[1].split("\nQ3-text")[0]
    assert q3_text.lstrip().split("\n")[1].strip().startswith("Not started: `split_heads`")
    assert "Not started: every question" not in r.output


def test_a_question_with_one_function_written_right_is_started(warm, tmp_path):
    path = stubbed(tmp_path, "one_left.py", ["scale_scores"])
    card_file = tmp_path / "card.json"
    run("check", path, "-a", "attention", "--json", card_file)
    card = json.loads(card_file.read_text())
    assert not any(q.get("not_started") for q in card["questions"])
    assert 0 < card["questions"][0]["score"] < card["questions"][0]["max_score"]


def test_min_score_says_whether_it_was_reached_and_the_most_automatic_points(warm, tmp_path):
    auto = sum(q["points"] for q in load_spec("attention")["questions"] if not q.get("manual"))
    manual = sum(q["points"] for q in load_spec("attention")["questions"]) - auto
    path = stubbed(tmp_path, "no_q3.py", ["split_heads", "head_weight_shape", "head_output_shape",
                                          "concat_shape", "w_o_shape", "multi_head_attention"])
    r = run("check", path, "-a", "attention", "--min-score", 70)
    assert r.exit_code == 1
    last = r.output.rstrip().split("\n")[-1]
    assert last == (f"--min-score 70 not reached: the score is 60; the most the automatic tests can give is "
                    f"{auto} (the other {manual} points are graded by a person).")
    r = run("check", path, "-a", "attention", "--min-score", 95)
    assert r.exit_code == 1 and r.output.rstrip().endswith("so no submission can reach 95 here.")
    r = run("check", path, "-a", "attention", "--min-score", 50)
    assert r.exit_code == 0 and r.output.rstrip().split("\n")[-1] == "--min-score 50 reached: the score is 60."
    r = run("check", path, "-a", "attention", "--min-score", 50, "--json", "-")
    assert r.exit_code == 0 and json.loads(r.stdout)["score"] == 60  # stdout stays JSON
    assert "--min-score 50 reached" in r.stderr


def test_ci_runs_that_reach_min_score_print_notices_not_errors(warm, tmp_path):
    path = stubbed(tmp_path, "no_q3.py", ["split_heads", "multi_head_attention"])
    summary = tmp_path / "summary.md"
    r = run("check", path, "-a", "attention", "--ci", "--min-score", 50, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.exit_code == 0, r.output
    annotations = [line for line in r.output.split("\n") if line.startswith("::")]
    assert annotations and all(line.startswith("::notice ") for line in annotations), annotations
    assert "--min-score 50 reached" in annotations[0]
    assert "--min-score 50 reached" in summary.read_text()
    r = run("check", path, "-a", "attention", "--ci", "--min-score", 95)
    assert r.exit_code == 1
    annotations = [line for line in r.output.split("\n") if line.startswith("::")]
    assert annotations and all(line.startswith("::error ") for line in annotations), annotations
    assert "not reached" in annotations[0] and "the most the automatic tests can give is 90" in annotations[0]
    r = run("check", path, "-a", "attention", "--ci")  # without --min-score: failures are errors
    assert r.exit_code == 1 and all(line.startswith("::error ") for line in r.output.split("\n")
                                    if line.startswith("::"))


def test_show_v_and_check_v_show_each_variant_the_grouped_output_points_to(warm, tmp_path):
    sub = os.path.join(ROOT, "submissions", "attention", "no_scaling.py")
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
