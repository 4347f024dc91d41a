"""JUnit XML of a scorecard, for CI test viewers (`check --junit`).

What it is for: `junit_xml`, pure text out of a scorecard dict: one <testsuite> per question, one
<testcase> per test, every student-controlled string escaped for XML (`checker.render.escape.for_xml`).

What it is not: the terminal's text (`checker.render.report`) or GitHub's renderings
(`checker.render.github`); it writes no file and decides no points.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

from checker.render.escape import for_xml
from checker.judging.scorecard import test_message

__all__ = ["junit_xml"]


def _xml_text(text):
    return for_xml(text)


def junit_xml(scorecard):
    """JUnit XML text: one <testsuite> per question, one <testcase> per test.

    failed and timeout -> <failure> (type "failed"/"timeout"), error -> <error>,
    skipped -> <skipped>. A manual question is an empty suite with a
    `pending` property. Test properties carry points, device and dtype.
    """
    assignment = str(scorecard.get("assignment") or "")
    root = ET.Element("testsuites", name=_xml_text(assignment))
    totals = Counter()
    total_time = 0.0
    for question in scorecard.get("questions") or []:
        tests = question.get("tests") or []
        counts = Counter(t.get("outcome") for t in tests)
        q_time = sum(float(t.get("duration_s") or 0) for t in tests)
        suite = ET.SubElement(root, "testsuite", {
            "name": _xml_text(question.get("id")),
            "tests": str(len(tests)),
            "failures": str(counts["failed"] + counts["timeout"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skipped"]),
            "time": f"{q_time:.6f}",
        })
        props = ET.SubElement(suite, "properties")
        for key in ("title", "score", "max_score"):
            ET.SubElement(props, "property", name=key, value=_xml_text(question.get(key, "")))
        if question.get("manual"):
            ET.SubElement(props, "property", name="pending",
                          value=str(bool(question.get("pending", True))).lower())
        if question.get("message"):
            ET.SubElement(props, "property", name="message", value=_xml_text(question["message"]))
        for test in tests:
            case = ET.SubElement(suite, "testcase", {
                "classname": _xml_text(f"{assignment}.{question.get('id')}"),
                "name": _xml_text(test.get("name")),
                "time": f"{float(test.get('duration_s') or 0):.6f}",
            })
            outcome = test.get("outcome")
            message = _xml_text(test_message(question, test))
            first = message.split("\n", 1)[0]
            if outcome in ("failed", "timeout"):
                ET.SubElement(case, "failure", message=first, type=outcome).text = message
            elif outcome == "error":
                ET.SubElement(case, "error", message=first, type="error").text = message
            elif outcome == "skipped":
                ET.SubElement(case, "skipped", message=first)
            case_props = ET.SubElement(case, "properties")
            for key in ("points", "max_points", "device", "dtype", "visibility"):
                if test.get(key) is not None:
                    ET.SubElement(case_props, "property", name=key, value=_xml_text(test[key]))
        totals.update({"tests": len(tests), "failures": counts["failed"] + counts["timeout"],
                       "errors": counts["error"], "skipped": counts["skipped"]})
        total_time += q_time
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(totals[key]))
    root.set("time", f"{total_time:.6f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
