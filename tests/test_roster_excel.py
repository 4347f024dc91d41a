"""A roster as a spreadsheet saves it is read whole: rows and Canvas's assignment column alike.

A TA's probe: a Canvas gradebook export saved by Excel with `;` separators (its locales with a decimal comma;
a byte order mark, CRLF) was matched, but canvas.csv's column fell back to the assignment's id: `read_roster`
found the `;`, `canvas_columns` read with commas. A roster saved as Windows-1252 (Excel's plain "CSV") was
refused with a raw codec error, while manual.csv and grades.csv in that encoding are read. Both readers now read
the file one way, as manual.csv is read (`checker.records.manual.decode_csv`, `csv_delimiter`).
"""

import csv
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records.roster import canvas_columns, read_roster
from checker.spec import example_dirs

SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
GRADEBOOK = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Homework 1 (4567)", "Current Score"],
             ["    Points Possible", "", "", "", "", "100.00", "(read only)"],
             ["Doe, John", "1001", "s1001", "jdoe", "CS101", "", ""],
             ["Müller, Jürgen", "1003", "s1003", "jmuller", "CS101", "", ""]]


def _saved(path, sep, encoding, bom=b""):
    text = "\r\n".join(sep.join(f'"{c}"' if sep in c or "," in c else c for c in row) for row in GRADEBOOK) + "\r\n"
    path.write_bytes(bom + text.encode(encoding))
    return str(path)


SAVES = {  # how Excel saves a CSV
    "CSV UTF-8, `;` (a decimal-comma locale)": (";", "utf-8", b"\xef\xbb\xbf"),
    "CSV, Windows-1252": (",", "cp1252", b""),
    "CSV, Windows-1252, `;`": (";", "cp1252", b""),
    "Unicode Text (UTF-16, tabs)": ("\t", "utf-16-le", b"\xff\xfe"),
    "CSV UTF-8": (",", "utf-8", b"\xef\xbb\xbf"),
}


@pytest.mark.parametrize("save", sorted(SAVES))
def test_a_gradebook_export_as_excel_saves_it_is_read_whole(tmp_path, save):
    path = _saved(tmp_path / "roster.csv", *SAVES[save])
    assert canvas_columns(path) == [("Homework 1 (4567)", "100.00")], save
    rows = read_roster(path)
    assert [(r["name"], r["canvas_user_id"], r["sis_login_id"]) for r in rows] == \
        [("Doe, John", "1001", "jdoe"), ("Müller, Jürgen", "1003", "jmuller")], save


def test_a_roster_that_is_no_file_is_refused_in_words(tmp_path):
    from checker.errors import HwcheckError
    with pytest.raises(HwcheckError, match="could not be read"):
        read_roster(str(tmp_path))  # a folder
    assert canvas_columns(str(tmp_path / "missing.csv")) is None


def test_grade_with_an_excel_gradebook_gives_canvas_csv_its_title_and_the_roster_its_names(tmp_path):
    """Through `hwcheck grade`: a gradebook saved as Windows-1252 with `;` (Excel in a German locale) names the
    students with their accents, and canvas.csv's column is the gradebook's own title."""
    folder = tmp_path / "download"
    folder.mkdir()
    shutil.copyfile(os.path.join(SUB, "correct.py"), folder / "müllerjürgen_1003_50003_hw1.py")
    roster = _saved(tmp_path / "roster.csv", ";", "cp1252")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--public",
                                  "--roster", roster])
    assert r.exit_code == 0, r.output
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0][-1] == "Homework 1 (4567)", r.output
    assert rows[2][:2] == ["Müller, Jürgen", "1003"], rows
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        book = {row["id"]: row for row in csv.DictReader(f)}
    assert book["müllerjürgen_1003"]["student"] == "Müller, Jürgen"
    assert "roster: no submission from Doe, John (s1001)" in r.output
