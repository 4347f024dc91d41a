"""Gradescope's results.json escapes a student's text as every other output does (h90, item 4 of its README).

A student's exception message reaches a test's `output`, a load message the top-level `output`: neither keeps
a raw ESC, BEL, CR or bidi override (U+202E), which Gradescope would show as it is.
"""

import json
import re

from checker.render.gradescope import make_failure_results, make_results

HOSTILE = "shape check\x1b[2J\x1b]0;pwn\x07\u202e evil\u2066 \r\x85 done"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def card():
    return {
        "score": 0, "max_score": 2, "duration_s": 1.0, "status": "graded",
        "load": {"ok": False, "messages": [f"raise_msg.py, line 3 raised ValueError: {HOSTILE}"]},
        "questions": [
            {"id": "Q1", "score": 0, "max_score": 2, "manual": False, "message": f"Q1 note {HOSTILE}",
             "tests": [
                 {"name": "test_a", "outcome": "error", "points": 0, "max_points": 1, "visibility": "visible",
                  "message": f"get_scores(...) raised ValueError: {HOSTILE}\nLikely mistake: x."},
                 {"name": f"test_b[{HOSTILE}]", "outcome": "failed", "points": 0, "max_points": 1,
                  "visibility": "hidden", "message": HOSTILE},
             ]},
        ],
    }


def texts(results):
    yield results["output"]
    for t in results["tests"]:
        yield t["output"]
        yield t["name"]


def test_no_raw_control_or_bidi_character_in_results_json():
    results = make_results(card())
    for text in texts(results):
        assert not RAW.search(text), ascii(text)
    shown = results["tests"][0]["output"]
    assert "\\x1b[2J" in shown and "\\u202e" in shown and "\\x07" in shown and "\\r" in shown
    assert "\nLikely mistake: x." in shown  # newlines stay line breaks
    assert "\\x1b" in results["output"] and "\\u202e" in results["output"]
    json.dumps(results, allow_nan=False)


def test_a_failure_results_message_is_escaped_too():
    results = make_failure_results(f"hwcheck could not grade this submission: {HOSTILE}")
    assert not RAW.search(results["output"]), ascii(results["output"])
    assert "\\u202e" in results["output"]


def test_ordinary_text_is_unchanged():
    plain = "get_scores(array (4, 4) float64) raised ValueError: x \u203a é 中文\n    raise ValueError('x')"
    results = make_failure_results(plain)
    assert results["output"] == plain
