"""Ids Windows cannot hold as file names (issue 26 item 1's leftover): a student whose file is `CON.py`, `a:b.py`
or `x..py` is graded under that id, and OUTDIR's files of every id are names Windows, macOS and FAT hold as
themselves (checker.records.ids.file_name), one per student even on a case-insensitive disk, with a student who names
a file after another's escaped name (`%43ON.py` beside `CON.py`) kept apart.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from checker.records.ids import FILE_NAME_BYTES, file_name, key
from checker.spec import example_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Windows's rules for one component of a path, written here from Microsoft's "Naming Files, Paths, and
# Namespaces", not from checker.records.ids
_DEVICE = re.compile(r"^(CON|PRN|AUX|NUL|COM[0-9\u00b9\u00b2\u00b3]|LPT[0-9\u00b9\u00b2\u00b3]) *(\..*)?$", re.I)


def windows_refuses(component):
    """Why Windows cannot hold `component` as itself, or None."""
    bad = [ch for ch in component if ch in '<>:"/\\|?*' or ord(ch) < 32]
    if bad:
        return f"holds {bad!r}"
    if component.endswith((".", " ")):
        return "ends in a dot or a space (Windows drops it)"
    if _DEVICE.match(component):
        return "is a device name"
    if not component or len(component.encode("utf-8")) > 255:
        return "is empty or too long"
    return None


HOSTILE_IDS = ["CON", "con.x", "Nul", "aux", "PRN", "COM1", "LPT9.tar", "lpt\u00b3", "a:b", "what?", "x.", "x..",
               "pipe|x", 'quote"d', "back\\slash", "star*", "lt<gt>", "tab\there", "per%cent", "%43ON", "%25",
               "a%3Ab", "\u00e9l\u00e8ve", "CONSOLE", ":" * 150, "c" * 150]


def test_every_id_gets_a_name_windows_holds():
    for sid in HOSTILE_IDS:
        name = file_name(sid)
        for made in (f"{name}.json", f"{name}.raw.json", name):  # OUTDIR/<id>.json, .raw.json, gradescope/<id>/
            assert windows_refuses(made) is None, (sid, made, windows_refuses(made))
        assert len(f"{name}.raw.json".encode()) <= 255 and len(name.encode()) <= FILE_NAME_BYTES


def test_names_are_one_to_one_even_on_a_case_insensitive_disk():
    names = {}
    for sid in HOSTILE_IDS:
        folded = file_name(sid).casefold()
        assert folded not in names, (sid, names.get(folded))
        names[folded] = sid
    assert len({key(s) for s in HOSTILE_IDS}) == len(HOSTILE_IDS)  # the ids themselves are distinct people


def test_an_id_every_file_system_holds_is_its_own_name():
    for sid in ("alice", "jdoe_1001", "\u00e9l\u00e8ve", "Doe, John", "a.b", "CONSOLE", "x.y.z"):
        assert file_name(sid) == sid


def _rows(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


@pytest.mark.slow
def test_students_named_like_windows_devices_are_graded_and_their_files_hold_on_windows(tmp_path):
    folder, out = tmp_path / "class", tmp_path / "out"
    folder.mkdir()
    right, wrong = example_path("attention", "correct.py"), example_path("attention", "no_scaling.py")
    right_ids = ["CON", "aux", "Nul.x", "LPT1", "a:b", "what?", "x.", "pipe|x", "back\\slash", "per%cent", "alice"]
    for sid in right_ids:
        shutil.copyfile(right, folder / f"{sid}.py")
    shutil.copyfile(wrong, folder / "%43ON.py")  # the escaped name of CON's files, as a student's id
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(folder), "-a", "attention", "-o", str(out),
                        "--public", "-j", "2"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = _rows(out)
    assert set(rows) == set(right_ids) | {"%43ON"}, sorted(rows)  # every one graded, under its own id
    full = rows["alice"]["total"]
    assert all(rows[sid]["total"] == full for sid in right_ids), {s: rows[s]["total"] for s in rows}
    assert float(rows["%43ON"]["total"]) < float(full)  # its own grade, not CON's

    cards = {}
    seen = {}
    for dirpath, dirs, files in os.walk(out):
        for name in dirs + files:
            rel = os.path.relpath(os.path.join(dirpath, name), out)
            assert windows_refuses(name) is None, (rel, windows_refuses(name))
            assert rel.casefold() not in seen, (rel, seen.get(rel.casefold()))  # one file on a case-insensitive disk
            seen[rel.casefold()] = rel
            if dirpath == str(out) and name.endswith(".json") and not name.endswith(".raw.json"):
                card = json.loads((out / name).read_text())
                if isinstance(card, dict) and "submission" in card:
                    cards[card["submission"]["id"]] = card
    assert set(cards) == set(rows), sorted(cards)
    assert {sid: f"{cards[sid]['score']:g}" for sid in cards} == \
        {sid: f"{float(rows[sid]['total']):g}" for sid in rows}
    results = {os.path.basename(os.path.dirname(p)) for p in
               (os.path.join(d, f) for d, _, fs in os.walk(out / "gradescope") for f in fs if f == "results.json")}
    assert len(results) == len(rows)

    # --resume finds every one of them current: nothing is graded again, no card is rewritten
    before = {p: p.read_bytes() for p in out.glob("*.json")}
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(folder), "-a", "attention", "-o", str(out),
                        "--public", "--resume"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert {p: p.read_bytes() for p in out.glob("*.json")} == before
