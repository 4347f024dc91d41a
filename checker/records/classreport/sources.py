"""What the class report reads from disk: the scorecards, manual.csv, the submissions' code, the starter.

What it is for: `read_scorecards(outdir)` (every scorecard of OUTDIR, one assignment),
`merge_manual(outdir, spec, cards)` (the grades of OUTDIR/manual.csv merged, by `checker.records.manual`), `code_of(path)` (the
Python code of a .py file, a notebook's code cells or a folder's files, as one text) and
`locate_code(scorecards, submissions_dir)`, which finds each submission's code where its scorecard
says it was graded from, or, given `submissions_dir` (the folder moved), at the same name there
(every file read by grading's rules, through `checker.running.safe_read`: no link out of a submission, no
FIFO or device, size capped, so the report shows what was graded and nothing of anyone else's);
the sha256 recorded in the scorecard tells whether it is still the code that was graded.
A .ipynb file that is no notebook (valid JSON with no list of cells, read by the loader's rules:
`checker.records.identical.notebook_cells`) has no code: the report names it in a note.
`given_code(assignment)` is the code of the handout (the starter notebook's code cells and the
README's Python blocks) that every student starts from, excluded from similarity.

Decision: the report reads the code from where it was graded and keeps no copy of its own: the
batch's output folder then holds no student code, and a moved folder is told in the report (the
submissions not found and those changed since grading are named) with `--submissions DIR` to
point at where they are now.

What it is not: a loader of student code (nothing here runs it), nor a place for numbers
(`checker.records.classreport.data`).
"""

from __future__ import annotations

import os
import re

__all__ = ["read_scorecards", "merge_manual", "code_of", "locate_code", "given_code", "MAX_FILE_BYTES"]

MAX_FILE_BYTES = 2 << 20  # a file of a submission larger than this is not read
_SUFFIXES = (".py", ".ipynb")
_MAX_FILES = 50


def read_scorecards(outdir):
    """(assignment, [scorecards]) of OUTDIR; ValueError when it holds none, or several assignments'."""
    from checker.records.outfolder import scorecards_in
    cards = list(scorecards_in(outdir))
    if not cards:
        raise ValueError(f"{outdir} holds no hwcheck scorecards (run `hwcheck grade ... -o {outdir}` first)")
    assignments = sorted({c["assignment"] for c in cards})
    if len(assignments) > 1:
        raise ValueError(f"{outdir} holds scorecards of several assignments ({', '.join(assignments)}); "
                         "grade each assignment into its own folder")
    return assignments[0], cards


def merge_manual(outdir, spec, cards):
    """(cards with OUTDIR/manual.csv merged as grades.csv has them, the rows' problems, whether there is one).

    The merge is `checker.records.manual`'s, the one the gradebook is written with: a manual question's
    points, an automatic question's regrade, adjustments; a row with empty points leaves its
    question pending.
    """
    from checker.records.manual import apply_manual, manual_path, read_manual
    path = manual_path(outdir)
    if not os.path.isfile(path):
        return cards, [], False
    ids = {str((c.get("submission") or {}).get("id", "")) for c in cards}
    entries, problems = read_manual(path, spec, ids)
    merged = [apply_manual(c, entries.get(str((c.get("submission") or {}).get("id", "")))) for c in cards]
    return merged, problems, True


def _read_text(path, root=None, secrets=()):
    """The text of a submission's file by grading's rules (checker.running.safe_read: regular files inside the
    submission, no link out of it, no FIFO or device, size capped), or None."""
    from checker.running.safe_read import Refused, read_text
    try:
        return read_text(path, root, limit=MAX_FILE_BYTES, secrets=secrets)
    except Refused:
        return None


def _notebook_code(text):
    """A notebook's code cells as one text (shell and magic lines left out), or None when it is no notebook.

    The cells are read by the loader's rules (`checker.records.identical.notebook_cells`): valid JSON with no
    list of cells (`{"cells": 1.5}`, `{"worksheets": 5}`) is no notebook, a source that is not text has none."""
    from checker.records.identical import notebook_cells
    cells = notebook_cells(text)
    if cells is None:
        return None
    # shell and magic lines are not Python
    return "\n\n".join("\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith(("!", "%")))
                       for src in cells)


def code_of(path, secrets=(), not_notebooks=None):
    """The Python code of a submission (file or folder) as one text, or None when none can be read.

    Its files are read as grading reads them (checker.running.safe_read): a link out of a folder, a FIFO or a
    device is not read; a single-file submission that is a link is followed unless into `secrets`. A .ipynb
    file that is no notebook (not JSON, or JSON with no list of cells) has no code; its path is appended to
    `not_notebooks` (a list) when one is given.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        files = []
        for root, dirs, names in os.walk(path, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
            files += [os.path.join(root, n) for n in sorted(names) if n.endswith(_SUFFIXES)
                      and not n.startswith(".")]
        texts = [_code_of_file(f, path, (), not_notebooks) for f in files[:_MAX_FILES]]
        texts = [t for t in texts if t]
        return "\n\n".join(texts) if texts else None
    return _code_of_file(path, None, secrets, not_notebooks)


def _code_of_file(path, root, secrets=(), not_notebooks=None):
    text = _read_text(path, root, secrets)
    if text is None:
        return None
    if not path.endswith(".ipynb"):
        return text
    code = _notebook_code(text)
    if code is None and not_notebooks is not None:
        not_notebooks.append(path)
    return code


def locate_code(scorecards, submissions_dir=None, secrets=()):
    """({id: code}, {"missing": [ids], "changed": [ids], "not_notebook": [ids], "unreadable": [ids]}) for the
    scorecards' submissions ("unreadable": there, but with no code the report may read).

    A submission is read where its scorecard says it was graded from, or from `submissions_dir` under
    the same name; "changed" are those whose sha256 differs from the one the scorecard recorded;
    "not_notebook" those with a .ipynb file that is no notebook (`code_of`): shown without that file's code
    (one with no other code is not in {id: code}, and not in "missing" either: it was found).
    `secrets`: folders (the output folder) a single-file submission's link may not lead into.
    """
    from checker.running.submission_files import sha256_of
    codes, missing, changed, not_notebook, unreadable = {}, [], [], [], []
    for card in scorecards:
        sub = card.get("submission") or {}
        sid, recorded = str(sub.get("id", "")), sub.get("path")
        path = recorded if isinstance(recorded, str) else None
        if submissions_dir and path:
            name = os.path.basename(os.path.normpath(path))
            path = os.path.join(submissions_dir, name) if name not in ("", ".", "..") else None
        bad = []
        code = code_of(path, secrets, bad) if path and os.path.exists(path) else None
        if bad:
            not_notebook.append(sid)
        if code is None and not bad:
            # not there at all, or there with no code the report may read (unreadable files, a link out of the
            # folder, no .py / .ipynb): two different things for the TA to do
            (unreadable if path and os.path.lexists(path) else missing).append(sid)
            continue
        if code is not None:
            codes[sid] = code
        try:
            if sub.get("sha256") and sha256_of(path) != sub["sha256"]:
                changed.append(sid)
        except OSError:
            pass
    return codes, {"missing": sorted(missing), "changed": sorted(changed), "not_notebook": sorted(not_notebook),
                   "unreadable": sorted(unreadable)}


_FENCED = re.compile(r"^```(?:python|py)\s*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def given_code(assignment):
    """[texts] the handout gives every student: the starter notebook's code cells, the README's Python blocks."""
    from checker.errors import SpecError
    from checker.spec import assignment_dir
    out = []
    try:
        folder = assignment_dir(assignment)  # a course's own folder too (HWCHECK_ASSIGNMENTS, entry points)
        names = sorted(os.listdir(folder))
    except (OSError, SpecError):
        return out
    for name in names:
        path = os.path.join(folder, name)
        if name.endswith(".ipynb"):
            code = code_of(path)
            if code:
                out.append(code)
        elif name.lower().endswith(".md"):
            text = _read_text(path, folder) or ""
            out += [m.group(1) for m in _FENCED.finditer(text)]
    return out
