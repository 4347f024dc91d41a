"""What the class report reads from disk: the scorecards, manual.csv, the submissions' code, the starter.

What it is for: `read_scorecards(outdir)` (every scorecard of OUTDIR, one assignment),
`merge_manual(outdir, spec, cards, unreadable)` (the grades of OUTDIR/manual.csv merged, by
`checker.records.manual`), `code_of(path)` (the Python code of a .py file, a notebook's code cells or a
folder's files, as one text) and
`locate_code(scorecards, submissions_dir)`, which finds each submission's code where its scorecard
says it was graded from, or, given `submissions_dir` (the folder moved), at the same name there
(every file read by grading's rules, through `checker.running.safe_read`: no link out of a submission, no
FIFO or device, size capped, so the report shows what was graded and nothing of anyone else's);
the sha256 recorded in the scorecard tells whether it is still the code that was graded.
What is compared is code, measured as code: a notebook's code cells (read within grading's notebook bound,
its saved outputs dropped), a folder's files chosen by what matters (those that define the assignment's
names first, then the others smallest first: `_folder_code`), at most MAX_CODE_BYTES of it per submission;
a folder is walked by `checker.walk.walk` (no recursion, no link followed, a bounded depth).
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

__all__ = ["read_scorecards", "merge_manual", "code_of", "locate_code", "given_code", "assignment_names",
           "MAX_CODE_BYTES", "MAX_READ_BYTES", "MAX_FILES"]

# of code compared per submission: a notebook's code cells (its saved outputs, a plot's image, are not code and
# count for nothing), a .py file's text, a folder's files together. Past it the files that define the
# assignment's names come first and the rest is left out, said in the report (`locate_code`'s "cut").
# A homework is some 10-50 kB of code; copydetect's fingerprint costs ~6 s and ~200 MB a megabyte and the report
# keeps every submission's at once (2 MiB each was ~400 MB and ~12 s a submission), hence 256 KiB.
MAX_CODE_BYTES = 256 << 10
# of a folder's files read to find that code (each file within grading's own bounds,
# checker.running.safe_read: a .py file to 4 MiB, a notebook to 32 MiB), smallest first
MAX_READ_BYTES = 64 << 20
MAX_FILES = 2000  # code files of a folder looked at (a homework holds a handful)
_SUFFIXES = (".py", ".ipynb")


def read_scorecards(outdir):
    """(assignment, [scorecards]) of OUTDIR; ValueError when it holds none, or several assignments'."""
    from checker.records.outfolder import foreign_key_line, scorecards_in
    foreign = foreign_key_line(outdir, "`hwcheck report` would show the class without them")
    if foreign:  # scorecards another key wrote (a merged OUT, another HWCHECK_KEY): unread, so never left out silently
        raise ValueError(foreign)
    cards = list(scorecards_in(outdir))
    if not cards:
        raise ValueError(f"{outdir} holds no hwcheck scorecards (run `hwcheck grade ... -o {outdir}` first)")
    assignments = sorted({c["assignment"] for c in cards})
    if len(assignments) > 1:
        raise ValueError(f"{outdir} holds scorecards of several assignments ({', '.join(assignments)}); "
                         "grade each assignment into its own folder")
    return assignments[0], cards


def merge_manual(outdir, spec, cards, unreadable=()):
    """(cards with OUTDIR/manual.csv merged as grades.csv has them, the rows' problems, whether there is one).

    The merge is `checker.records.manual`'s, the one the gradebook is written with: a manual question's
    points, an automatic question's regrade, adjustments; a row with empty points leaves its
    question pending. `unreadable`: the ids whose scorecard is there but cannot be read
    (`checker.records.outfolder.unreadable_scorecards`): graded all the same, so their rows are no
    problem of manual.csv's (the report names those scorecards itself), as the gradebook takes them.
    """
    from checker.records.manual import apply_manual, manual_path, read_manual
    path = manual_path(outdir)
    if not os.path.isfile(path):
        return cards, [], False
    ids = {str((c.get("submission") or {}).get("id", "")) for c in cards} | set(unreadable)
    entries, problems = read_manual(path, spec, ids)
    merged = [apply_manual(c, entries.get(str((c.get("submission") or {}).get("id", "")))) for c in cards]
    return merged, problems, True


def _read_text(path, root=None, secrets=()):
    """The text of a submission's file by grading's rules (checker.running.safe_read: regular files inside the
    submission, no link out of it, no FIFO or device, within grading's size bounds: a notebook's saved outputs
    may make it large, its code is measured once read), or None."""
    from checker.running.safe_read import Refused, read_text
    try:
        return read_text(path, root, secrets=secrets)
    except Refused:
        return None


def _large_py(path, root, secrets=()):
    """A .py file past grading's 4 MiB for reading one (the worker copies and runs one up to 64 MiB), read up to
    MAX_READ_BYTES with its pasted tables of numbers blanked, as the by-hand scan reads it: a copy padded with
    `_PAD = [0, 0, ...]` is compared by its code (an attacker's probe). None where it is still refused."""
    from checker.running.safe_read import Refused, read_text
    from checker.running.scan_read import _without_numeric_data
    try:
        text = read_text(path, root, limit=MAX_READ_BYTES, secrets=secrets)
    except Refused:
        return None
    return "\n".join(ln for ln in _without_numeric_data(text).split("\n") if ln.strip())


def _notebook_code(text):
    """A notebook's code cells as one text (shell and magic lines left out), or None when it is no notebook.

    The cells are read by the loader's rules (`checker.records.identical.notebook_cells`): valid JSON with no
    list of cells (`{"cells": 1.5}`, `{"worksheets": 5}`) is no notebook, a source that is not text has none.
    Outputs, attachments and metadata are dropped: only the code is compared and measured."""
    from checker.records.identical import notebook_cells
    cells = notebook_cells(text)
    if cells is None:
        return None
    # shell and magic lines are not Python
    return "\n\n".join("\n".join(ln for ln in src.splitlines() if not ln.lstrip().startswith(("!", "%")))
                       for src in cells)


def assignment_names(spec):
    """The names an assignment's questions ask for (`get_scores`, `MultiHeadSelfAttention`...), from its spec."""
    return [n for q in (spec or {}).get("questions") or [] if isinstance(q, dict)
            for n in q.get("names") or [] if isinstance(n, str) and n.isidentifier()]


def code_of(path, secrets=(), not_notebooks=None, names=(), cut=None):
    """The Python code of a submission (file or folder) as one text, or None when none can be read.

    Its files are read as grading reads them (checker.running.safe_read): a link out of a folder, a FIFO or a
    device is not read; a single-file submission that is a link is followed unless into `secrets`. A .ipynb
    file that is no notebook (not JSON, or JSON with no list of cells) has no code; its path is appended to
    `not_notebooks` (a list) when one is given. At most MAX_CODE_BYTES of code is kept: a folder's files that
    define `names` (the assignment's, `assignment_names`) first (`_folder_code`); where any code was left out,
    `path` is appended to `cut` (a list) when one is given.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        return _folder_code(path, not_notebooks, names, cut)
    code = _code_of_file(path, None, secrets, not_notebooks)
    if code is not None and len(code) > MAX_CODE_BYTES:
        code = _cut(code, MAX_CODE_BYTES)
        if cut is not None:
            cut.append(path)
    return code


def _code_of_file(path, root, secrets=(), not_notebooks=None):
    text = _read_text(path, root, secrets)
    if text is None and path.endswith(".py"):
        text = _large_py(path, root, secrets)
    if text is None:
        return None
    if not path.endswith(".ipynb"):
        return text
    code = _notebook_code(text)
    if code is None and not_notebooks is not None:
        not_notebooks.append(path)
    return code


def _cut(code, size):
    """The first `size` characters of `code`, ended at a line's end where there is one."""
    head = code[:size]
    end = head.rfind("\n")
    return head[:end + 1] if end > 0 else head


def _definitions(names):
    """A pattern for a line that binds one of `names` at a file's top level or in a class or block (`def f`,
    `class C`, `f = ...`, `f: T = ...`), or None without names."""
    names = sorted({n for n in names if isinstance(n, str) and n.isidentifier()})
    if not names:
        return None
    alt = "|".join(re.escape(n) for n in names)
    return re.compile(rf"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+({alt})\b|^({alt})[ \t]*(?::[^=\n]*)?=(?!=)",
                      re.MULTILINE)


def _folder_code(path, not_notebooks=None, names=(), cut=None):
    """A folder submission's code, chosen by what matters, not by name: its code files (.py and notebooks, in
    hidden folders too but no .git, __pycache__ or .ipynb_checkpoints, found by `checker.walk.walk`: no recursion, no link followed, at most
    `MAX_DEPTH` folders down) are read smallest first within MAX_READ_BYTES; then, within MAX_CODE_BYTES, the
    files that define the assignment's `names` come first (for each name, the last file in the loader's
    order that binds it, as the loader's last definition is the one graded), then the others smallest first.
    They are joined in the loader's order (.py files, then notebooks). Fifty one-line files named to sort
    first, or a padded notebook, no longer push the graded code out of the comparison."""
    from checker.walk import walk
    left_out = []
    files = []
    for root, dirs, fnames in walk(path, cut=left_out):
        # hidden folders too (the worker copies them, and code on sys.path imports from them), not caches
        dirs[:] = [d for d in dirs if d not in (".git", "__pycache__", ".ipynb_checkpoints")]
        files += [os.path.join(root, n) for n in fnames if n.endswith(_SUFFIXES) and not n.startswith(".")]
        if len(files) > MAX_FILES:
            left_out.append((root, f"more than {MAX_FILES} code files"))
            break
    files = files[:MAX_FILES]

    sizes = {}
    for f in files:  # a link's by what it leads to (safe_read reads one only inside the folder)
        try:
            sizes[f] = os.stat(f).st_size
        except (OSError, ValueError):
            sizes[f] = 0
    codes, read_left = {}, MAX_READ_BYTES
    for f in sorted(files, key=lambda f: (sizes[f], f)):
        if sizes[f] > read_left:
            left_out.append((f, "past what the report reads of one submission"))
            break
        code = _code_of_file(f, path, (), not_notebooks)
        read_left -= sizes[f] if code is None else max(sizes[f], len(code))  # (a file that grew meanwhile)
        if code:
            codes[f] = code
        elif code is None and f.endswith(".py"):  # refused (past grading's size for a .py file, a link out...)
            left_out.append((f, "a code file the report could not read"))
    order = sorted(codes, key=lambda f: (not f.endswith(".py"), f))  # the loader's (checker.worker.sources.list_units)
    pattern = _definitions(names)
    definers = []
    if pattern is not None:
        last = {}
        for f in order:
            for m in pattern.finditer(codes[f]):
                last[m.group(1) or m.group(2)] = f
        definers = [f for f in order if f in set(last.values())]
    first = set(definers)
    rest = sorted((f for f in order if f not in first), key=lambda f: (len(codes[f]), f))
    chosen, code_left = {}, MAX_CODE_BYTES
    for f in definers + rest:
        text = codes[f]
        if len(text) > code_left:
            left_out.append((f, "past the code the report compares"))
            if f in first and code_left > 0:
                chosen[f] = _cut(text, code_left)
                code_left = 0
            continue
        chosen[f] = text
        code_left -= len(text)
    if left_out and cut is not None:
        cut.append(path)
    texts = [chosen[f] for f in order if f in chosen]
    return "\n\n".join(texts) if texts else None


def locate_code(scorecards, submissions_dir=None, secrets=(), names=()):
    """({id: code}, {"missing": [ids], "changed": [ids], "not_notebook": [ids], "unreadable": [ids], "cut": [ids]})
    for the scorecards' submissions ("unreadable": there, but with no code the report may read; "cut": more code
    than the report compares, MAX_CODE_BYTES, or files past its other bounds: the files that define `names`, the
    assignment's, are compared first, `code_of`).

    A submission is read where its scorecard says it was graded from, or from `submissions_dir` under
    the same name; "changed" are those whose sha256 differs from the one the scorecard recorded;
    "not_notebook" those with a .ipynb file that is no notebook (`code_of`): shown without that file's code
    (one with no other code is not in {id: code}, and not in "missing" either: it was found).
    `secrets`: folders (the output folder) a single-file submission's link may not lead into.
    """
    from checker.running.submission_files import sha256_of
    codes, missing, changed, not_notebook, unreadable, cut = {}, [], [], [], [], []
    for card in scorecards:
        sub = card.get("submission") or {}
        sid, recorded = str(sub.get("id", "")), sub.get("path")
        path = recorded if isinstance(recorded, str) else None
        if submissions_dir and path:
            name = os.path.basename(os.path.normpath(path))
            path = os.path.join(submissions_dir, name) if name not in ("", ".", "..") else None
        bad, partly = [], []
        code = code_of(path, secrets, bad, names, partly) if path and os.path.exists(path) else None
        if bad:
            not_notebook.append(sid)
        if partly and code is not None:
            cut.append(sid)
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
                   "unreadable": sorted(unreadable), "cut": sorted(cut)}


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
