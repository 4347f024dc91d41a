"""The LMS layouts recognised by their folders: Gradescope's "Export Submissions" and GitHub Classroom.

What it is for: `checker.records.lms.recognise` asks `gradescope(folder, names)` and `classroom(folder, names)`
for the students of a folder, one folder each (the facts of each layout: `checker.records.lms`'s docstring).
Gradescope's export is recognised only by its whole structure (`submission_metadata.yml` and nothing but the
`submission_<id>` folders it names); GitHub Classroom's by its one folder per student sharing a prefix. Each
gives plain rows, which `checker.records.lms` makes its `Student`s of.

What it is not: Canvas's and Moodle's file names (`checker.records.lms`), or the grading of what is found.
"""

from __future__ import annotations

import json
import os
import re

from checker.errors import HwcheckError

__all__ = ["GRADESCOPE_METADATA", "read_gradescope_metadata", "gradescope", "classroom"]

_GRADESCOPE_DIR = re.compile(r"^submission_\d+$")
GRADESCOPE_METADATA = "submission_metadata.yml"


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return json.loads(value)
        except ValueError:
            return value[1:-1]
    return value


def read_gradescope_metadata(path):
    """{submission folder: [{name, sid, email}]} from Gradescope's submission_metadata.yml.

    Only what hwcheck needs is read, line by line (the file is Ruby's YAML, with `:key:`
    symbols; a general YAML loader is not needed and would meet Ruby's own tags).
    """
    out, current, person, inside = {}, None, None, False
    with open(path, encoding="utf-8-sig") as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            indent = len(line) - len(line.lstrip(" "))
            text = line.strip()
            if indent == 0:
                current = _unquote(text[:-1]) if text.endswith(":") else None
                if current is not None:
                    out[current] = []
                person, inside = None, False
                continue
            if current is None:
                continue
            if indent <= 2 and text.startswith(":"):  # a key of the submission: :submitters:, :created_at:, ...
                person, inside = None, text.split(":")[1] == "submitters"
                continue
            if not inside:
                continue
            if text.startswith("- "):
                text, person = text[2:].strip(), {}
                out[current].append(person)
            m = re.match(r"^:(name|sid|email):\s*(.*)$", text)
            if m and person is not None:
                person[m[1]] = _unquote(m[2])
    return out


def gradescope(folder, names):
    """[(id, folder, student, student_id, email, {LMS fields})] of Gradescope's export, by its whole structure: its
    metadata file and nothing but the `submission_<id>` folders it names (a lone `submission_metadata.yml` among
    students' files makes no export); None when `folder` is no such export."""
    meta = os.path.join(folder, GRADESCOPE_METADATA)
    if not os.path.isfile(meta):
        return None
    others = [n for n in names if n != GRADESCOPE_METADATA]
    if not others or not all(_GRADESCOPE_DIR.match(n) and os.path.isdir(os.path.join(folder, n)) for n in others):
        return None
    try:
        who = read_gradescope_metadata(meta)
    except (OSError, UnicodeDecodeError) as e:
        raise HwcheckError(f"{meta} could not be read: {e}") from None
    if not all(n in who for n in others):
        return None
    found = []
    for n in others:
        people = [p for p in who[n] if isinstance(p, dict)]
        found.append((n, os.path.join(folder, n), *("; ".join(p.get(f, "") for p in people)
                                                     for f in ("name", "sid", "email")), {}))
    return found


def classroom(folder, names, roster_rows=None, refused=None):
    """[(id, folder, student, student_id, email, {LMS fields})] of GitHub Classroom's repositories: every entry a
    folder, all sharing a prefix that ends in `-` (see `checker.records.lms`); None when `folder` is not so.

    The username is what follows the assignment's slug: the folder's own where it is `gh classroom clone`'s
    `<slug>-submissions`; else, where a roster with GitHub usernames is given (`roster_rows`), the roster's
    username that is the whole tail of the repository's name after a prefix all the repositories share
    (`hw1-ucb-alice` is `ucb-alice`'s when only she fits). A repository that more than one roster username fits
    so (`ucb-alice` and `alice` both) is no one's: left out of the rows, named in `refused` [(name, why)], never
    guessed (h86: the longest shared prefix `hw1-ucb-` gave ucb-alice's grade to alice). A repository no roster
    username fits keeps the tail after the longest shared prefix (the roster's report names it unmatched)."""
    if len(names) < 2 or not all(os.path.isdir(os.path.join(folder, n)) for n in names):
        return None
    common = os.path.commonprefix(names)
    prefix = common[:common.rfind("-") + 1]
    if not prefix or any(len(n) == len(prefix) for n in names):
        return None
    # `gh classroom clone student-repos` clones into `<assignment slug>-submissions`: the slug is the repos'
    # prefix, so usernames that share a start (ucb-alice, ucb-bob) keep it
    base = os.path.basename(os.path.normpath(folder))
    slug = base[:-len("-submissions")] + "-" if base.endswith("-submissions") else ""
    if slug and len(slug) < len(prefix) and prefix.startswith(slug):
        prefix = slug
    users = {}
    if not slug:
        users = {str(r.get("github_username") or "").strip().lower(): str(r.get("github_username")).strip()
                 for r in roster_rows or () if str(r.get("github_username") or "").strip()}
    rows = []
    for n in names:
        tail = n[len(prefix):]
        fits = sorted(u for u in users if len(n) > len(u) and n.lower().endswith("-" + u)
                      and common.lower().startswith(n[:len(n) - len(u)].lower()))
        if len(fits) > 1:
            if refused is not None:
                shown = " and ".join(users[u] for u in fits)
                refused.append((n, f"a GitHub Classroom repository the roster's usernames {shown} both fit (the "
                                   f"assignment's prefix before each would be shared by every repository): whose "
                                   f"it is cannot be told, so it is not graded; name the folder "
                                   f"`<assignment slug>-submissions` (as `gh classroom clone` does, e.g. "
                                   f"{n[:len(n) - max(map(len, fits)) - 1]}-submissions) and grade it again"))
            continue
        if fits:
            tail = n[len(n) - len(fits[0]):]
        rows.append((n, os.path.join(folder, n), tail, tail, "", {"github_username": tail}))
    return rows
