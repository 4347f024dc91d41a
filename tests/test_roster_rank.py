"""A roster row claimed exactly by several submissions goes to the most trusted kind of key (h86, h87).

A TA's probe (h86, repro_roster_tie.sh): in a plain folder, `Bob Jones.py` (a file named after a classmate's
full name) and `2002.py` (Bob Jones's own submission, by his student id 2002) both matched Bob Jones's row
exactly, one by name and one by student id; the tie gave the row to neither, so the real submitter was reported
as having no submission. The roster ranks its keys (a student id before an e-mail before a name): an exact
student id wins over an exact name.
"""

from checker.records.roster import match_roster, roster_lines

ROWS = [{"name": "Bob Jones", "student_id": "2002", "email": "bj@u.edu"},
        {"name": "Alice Smith", "student_id": "2001", "email": "as@u.edu"},
        {"name": "Mallory Evil", "student_id": "2003", "email": "me@u.edu"}]


def test_an_exact_student_id_beats_an_exact_name():
    people = {"2002": {}, "Bob Jones": {}, "2001": {}}  # a plain folder: no identity but the id
    merged, report = match_roster(people, ROWS)
    assert merged["2002"]["roster"] == "matched"
    assert merged["2002"]["student"] == "Bob Jones" and merged["2002"]["student_id"] == "2002"
    assert merged["Bob Jones"]["roster"] == "unmatched"  # never Bob's row
    assert merged["Bob Jones"].get("student_id", "") != "2002"
    assert [r["name"] for r in report["missing"]] == ["Mallory Evil"]  # Bob Jones handed in
    assert [(a["id"], a["given_to"]) for a in report["ambiguous"]] == [("Bob Jones", "2002")]
    text = "\n".join(roster_lines(report, merged))
    assert "no submission from Mallory Evil" in text and "no submission from Bob Jones" not in text


def test_two_exact_claims_of_one_kind_still_give_the_row_to_no_one():
    rows = [{"name": "Bob Jones", "student_id": "2002", "email": "bj@u.edu"}]
    people = {"a": {"student": "Bob Jones"}, "b": {"student": "Bob Jones"}}
    merged, report = match_roster(people, rows)
    assert merged["a"]["roster"] == merged["b"]["roster"] == "unmatched"
    assert sorted(a["id"] for a in report["ambiguous"]) == ["a", "b"]
