"""The commands README.md gives a TA work as written in a fresh clone (h91's probe).

README's first TA command graded `submissions/`, whose entries are links to folders (`submissions/<id>` ->
`assignments/<id>/examples`): `grade` rightly refuses a link to a folder inside the folder it grades, then
found "no submissions". The folder the README names must hold submissions `grade` takes, and none it refuses.
Cheap: the folder is listed as `grade` lists it, nothing is graded.
"""
import os
import re
import shlex

from checker.records.entries import list_entries, skipped_entries

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _grade_commands():
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    return [shlex.split(m.group(1)) for m in re.finditer(r"`(hwcheck grade [^`]+)`", text)]


def test_the_readmes_grade_commands_name_a_folder_grade_takes():
    commands = _grade_commands()
    assert commands, "README.md gives no `hwcheck grade` command"
    for words in commands:
        folder = os.path.join(ROOT, words[2])
        assert os.path.isdir(folder), words
        entries = list_entries(folder)
        refused = [(name, why) for name, why in skipped_entries(folder) if "link" in why]
        assert entries and not refused, (" ".join(words), refused)
        aid = words[words.index("-a") + 1]
        assert os.path.realpath(folder) == os.path.realpath(os.path.join(ROOT, "assignments", aid, "examples")), words
