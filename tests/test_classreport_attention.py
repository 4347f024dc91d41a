"""The class report's "Submissions to open by hand" lists every submission a person should look at before
grades go out (issue 30): a 0/100 that loaded and ran, and a crashed one, beside the load problems and
timeouts it listed before; an honest full-marks submission is not listed."""
import os
import textwrap

from checker.records.classreport.data import class_data
from checker.records.grading import crashed_scorecard
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NOTHING_RIGHT = textwrap.dedent('''\
    import numpy as np

    def get_scores(matrix, vector):
        return np.zeros(len(matrix)) - 7.0

    def scale_scores(scores, n):
        return scores * 0 - 7.0

    def get_attention_weights(scores):
        return np.zeros_like(scores) - 7.0

    def get_context_vector(attention_weights, hidden_encoder_matrix):
        return np.zeros(hidden_encoder_matrix.shape[-1]) - 7.0

    def context_vector(encoder_states, decoder_state):
        return np.zeros(encoder_states.shape[-1]) - 7.0
    ''')


def test_zero_and_crashed_submissions_are_listed_to_open_by_hand(grader, tmp_path):
    (tmp_path / "zed.py").write_text(NOTHING_RIGHT)
    zero = grader.grade(str(tmp_path / "zed.py"), "attention")
    assert zero["status"] == "graded" and zero["score"] == 0, zero["score"]
    good = grader.grade(os.path.join(ROOT, "submissions", "attention", "correct.py"), "attention")
    crashed = crashed_scorecard("bob", str(tmp_path / "bob.py"), "attention", "public", "the worker zygote died")
    listed = {a["id"]: a["reasons"] for a in class_data([zero, good, crashed], load_spec("attention"))["attention"]}
    auto_max = sum(q["max_score"] for q in zero["questions"] if not q["manual"])
    assert f"0 of {auto_max:g} automatic points: no test passed" in listed.get(zero["submission"]["id"], []), listed
    assert any(r.startswith("crashed") for r in listed.get("bob", [])), listed
    assert [r for r in listed.get(good["submission"]["id"], []) if "0 of" in r or "crashed" in r] == []
