"""One grouped, short line per reason, in the text and in the notebook's HTML view (issue 30).

A bug shows in many variants of one test (dtypes, sizes): the text groups the variants that failed the
same way, and the HTML view must too (it opened 12 blocks for one bug); skip reasons worded per variant
(~600 characters each, repeated per dtype) are told once, by their first clause, counted.
"""
from checker.platforms.notebook_html import scorecard_html
from checker.render.report import format_scorecard
from checker.render.scorecard_text import short_reason, skip_groups

LONG = ("judged by test_mhsa_averages_the_values_over_the_keys, not here: the outputs of "
        "MultiHeadSelfAttention(8, 2) in {dtype} are not a softmax-weighted average of the values with weights "
        "of a useful size, so the weights of the queries over the keys cannot be read off " + "x" * 400)


def _view():
    failing = [{"name": f"test_mhsa_shape[{dtype}-{n}]", "outcome": "failed", "points": 0, "max_points": 1,
                "message": f"MultiHeadSelfAttention({n}, 2) in {dtype}: expected shape (2, 5, {n}), got (2, 5, 1)",
                "device": "cpu", "dtype": dtype, "duration_s": 0.01, "visibility": "visible"}
               for dtype in ("float32", "float64") for n in (4, 6, 8, 10, 12, 16)]
    skipped = [{"name": f"test_mhsa_weights[{dtype}]", "outcome": "skipped", "points": 0, "max_points": 0,
                "message": LONG.format(dtype=dtype), "device": "cpu", "dtype": dtype, "duration_s": 0,
                "visibility": "visible"} for dtype in ("float32", "float64", "float16", "bfloat16")]
    return {"assignment": "vit", "submission": {"id": "s", "path": "s.py"}, "status": "graded", "score": 0,
            "max_score": 35, "load": {"ok": True, "messages": []}, "grader": {"mode": "public"},
            "questions": [{"id": "mhsa", "title": "MHSA", "score": 0, "max_score": 35, "manual": False,
                           "tests": failing + skipped}]}


def test_skip_reasons_are_one_short_clause_counted_together():
    assert short_reason(LONG.format(dtype="float32")) == \
        "judged by test_mhsa_averages_the_values_over_the_keys, not here"
    assert short_reason("y" * 500).endswith("...") and len(short_reason("y" * 500)) == 120
    tests = _view()["questions"][0]["tests"]
    assert skip_groups(tests) == [("judged by test_mhsa_averages_the_values_over_the_keys, not here", 4)]
    text = format_scorecard(_view(), color=False)
    lines = [ln for ln in text.splitlines() if "skipped" in ln]
    assert lines == ["    4 skipped: judged by test_mhsa_averages_the_values_over_the_keys, not here"], lines
    assert len(format_scorecard(_view(), color=False, verbose=True)) > len(text)  # -v keeps every reason in full


def test_the_html_view_groups_failing_variants_as_the_text_does():
    page = scorecard_html(_view(), source="checked")
    assert page.count("<details") == 1, page.count("<details")  # one bug, one block (was 12)
    assert "also failed the same way" in page and "[float64-8] and 3 more" in page
    assert page.count("skipped:") == 1 and "x" * 50 not in page
    text = format_scorecard(_view(), color=False)
    assert text.count("FAILED") == 1 and "also failed the same way" in text
