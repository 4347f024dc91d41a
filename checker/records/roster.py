"""The class roster: who should have handed in, matched with the submissions graded.

What it is for: `hwcheck grade ... --roster roster.csv`. `read_roster(path)` reads a CSV
(as a spreadsheet saves it: UTF-8 with or without a byte order mark, Windows-1252 or UTF-16, separated by
`,`, `;` or a tab; a Canvas gradebook export, a Moodle grading
worksheet, a GitHub Classroom roster or a plain `name,student_id,email` file) into rows
{name, student_id, email, canvas_user_id, sis_user_id, sis_login_id, section,
moodle_participant, github_username}; `match_roster(people, rows)` matches each submission's identity
(`checker.records.lms`) to a row by id, then e-mail, then name, everything NFC-normalised and
case-folded (a name also as letters only, and as "lastfirst", which is how Canvas writes
it in file names); a GitHub Classroom repository's username, the student's own choice, only with a
GitHub username column, exactly but for letter case (never a name, in any form); and returns the
identities with the roster's name and ids filled in, plus the report: the students with no submission,
the submissions that match no one, and those that matched a row another submission matched too (a
row goes to the one submission that matches it exactly by the most trusted kind of key, an exact student id
before an exact name, or else to none of them: never first-come); a group submission keeps
every member (one the roster lacks is named); students of one name, matched by name, are named
as such, to match by hand, not as having no submission.

`canvas_columns(path)` lists the assignment columns of a roster that is Canvas's gradebook
export (Gradebook > Export: `Student, ID, SIS User ID, SIS Login ID, Section`, then one
column per assignment titled `Name (assignment id)`, then totals such as `Current Score`
that carry no id); `canvas_column(columns, spec)` picks the one column canvas.csv should
update (`checker.records.exports`), or none: never a guess between several.

What it is not: a reader of the LMS's folder layout (`checker.records.lms`) or a gradebook writer.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata

from checker.errors import HwcheckError
from checker.records.manual import csv_delimiter, decode_csv

__all__ = ["read_roster", "match_roster", "roster_lines", "name_keys", "canvas_columns", "canvas_column"]

# header (case-folded, spaces squeezed) -> field
_FIELDS = {
    "name": "name", "student": "name", "full name": "name", "student name": "name", "fullname": "name",
    "first name": "first", "firstname": "first", "given name": "first",
    "last name": "last", "lastname": "last", "surname": "last", "family name": "last",
    "student_id": "student_id", "student id": "student_id", "sid": "student_id", "id number": "student_id",
    "matriculation number": "student_id", "identifier": "identifier", "username": "student_id", "login": "student_id",
    # GitHub usernames (GitHub Classroom's roster export: `github_username`): the only column a repository's
    # username is matched with (`_person_keys`)
    "github_username": "github", "github username": "github", "github login": "github", "github_login": "github",
    "github": "github", "github user": "github", "github account": "github",
    "email": "email", "email address": "email", "e-mail": "email",
    "id": "id", "sis user id": "sis_user_id", "sis login id": "sis_login_id", "section": "section",
}


def _norm(text):
    return " ".join(unicodedata.normalize("NFC", str(text or "")).split())


def _key(text):
    return _norm(text).casefold()


def _letters(text):
    return "".join(ch for ch in _key(text) if ch.isalnum())


def _table(path):
    """The roster's cells, read as a spreadsheet saved the file (one reading for `read_roster` and
    `canvas_columns`, as manual.csv's): UTF-8 with or without a byte order mark, else Windows-1252 (Excel's
    plain "CSV"), UTF-16 (its "Unicode Text"); separated by `,`, or by `;` (Excel in a locale whose decimal
    separator is a comma) or a tab, found from the first row; CRLF or LF."""
    with open(path, "rb") as f:
        text = decode_csv(f.read())
    return list(csv.reader(io.StringIO(text, newline=""), delimiter=csv_delimiter(text)))


def read_roster(path):
    """The roster's rows (see the module docstring); a file with no name, id or e-mail column is an error."""
    try:
        table = _table(path)
    except OSError as e:
        raise HwcheckError(f"the roster {path} could not be read: {e.strerror or e}") from None
    if not table:
        raise HwcheckError(f"the roster {path} is empty")
    header = [_FIELDS.get(_key(h)) for h in table[0]]
    if not {"name", "first", "last", "student_id", "email", "identifier", "id", "github"} & set(header):
        raise HwcheckError(f"the roster {path} has none of the columns name, student_id, email, github_username "
                           f"(its header: {', '.join(table[0][:8])})")
    canvas = "sis_user_id" in header
    rows = []
    for cells in table[1:]:
        raw = {}
        for field, value in zip(header, cells):
            if field and field not in raw:
                raw[field] = _norm(value)
        name = raw.get("name") or " ".join(x for x in (raw.get("first"), raw.get("last")) if x)
        if not any(raw.values()) or _key(name) in ("points possible", "test student", "student, test", "manual posting"):
            continue  # Canvas's rows under the header (points, the posting policy), and its test student
        row = {"name": name, "student_id": raw.get("student_id", ""), "email": raw.get("email", "")}
        if raw.get("github"):
            row["github_username"] = raw["github"]
        if canvas:
            row.update(canvas_user_id=raw.get("id", ""), sis_user_id=raw.get("sis_user_id", ""),
                       sis_login_id=raw.get("sis_login_id", ""), section=raw.get("section", ""))
            row["student_id"] = row["student_id"] or row["sis_user_id"] or row["canvas_user_id"]
        elif raw.get("id"):
            row["student_id"] = row["student_id"] or raw["id"]
        m = re.match(r"^participant\s*(\d+)$", _key(raw.get("identifier", "")))
        if m:
            row["moodle_participant"] = m[1]
        elif raw.get("identifier"):
            row["student_id"] = row["student_id"] or raw["identifier"]
        row["student_id"] = row["student_id"] or row.get("github_username", "")
        rows.append(row)
    return rows


_ASSIGNMENT_COLUMN = re.compile(r"^(.*\S)\s*\((\d+)\)$")


def canvas_columns(path):
    """[(title, points possible)] of the assignment columns of Canvas's gradebook export at `path`, in order;
    None when the file is no Canvas gradebook export (its header lacks `SIS User ID` or `Section`)."""
    try:
        table = _table(path)
    except OSError:
        return None
    if not table:
        return None
    header = [_key(h) for h in table[0]]
    if "sis user id" not in header or "section" not in header:
        return None
    points = next((r for r in table[1:] if r and _key(r[0]) == "points possible"), [])
    start = header.index("section") + 1  # Canvas's student columns end at Section
    return [(_norm(table[0][i]), _norm(points[i]) if i < len(points) else "")
            for i in range(start, len(header)) if _ASSIGNMENT_COLUMN.match(_norm(table[0][i]))]


def canvas_column(columns, spec):
    """(title, why) of the one column of `columns` (`canvas_columns`) canvas.csv should update: the only
    assignment column, else the only one whose name (its `(id)` aside; letters and digits, case-folded) is the
    assignment's id or its title; (None, why not) otherwise - several are never guessed between."""
    if not columns:
        return None, "it has no assignment column (`Name (id)`)"
    if len(columns) == 1:
        return columns[0][0], "its only assignment column"
    names = {_letters(spec.get("id", "")), _letters(spec.get("title", ""))} - {""}
    named = [c for c, _ in columns if _letters(_ASSIGNMENT_COLUMN.match(c)[1]) in names]
    if len(named) == 1:
        return named[0], f"its column named after {spec.get('id')}"
    shown = ", ".join(f'"{c}"' for c, _ in columns[:8]) + (f" and {len(columns) - 8} more" if len(columns) > 8 else "")
    return None, f"it has {len(columns)} assignment columns ({shown}) and hwcheck does not guess between them"


def name_keys(name):
    """A name's letters-only keys: as written, and last word first ("Jürgen Müller" -> "müllerjürgen")."""
    keys = {_letters(name)}
    if "," in name:  # "Müller, Jürgen"
        last, _, first = name.partition(",")
        keys.add(_letters(last + first))
        keys.add(_letters(first + last))
    words = _norm(name).split()
    if len(words) > 1:
        keys.add(_letters(words[-1] + "".join(words[:-1])))
    keys.discard("")
    return keys


def _row_keys(row):
    keys = {("id", _key(v)) for v in (row.get("student_id"), row.get("sis_user_id"), row.get("sis_login_id"),
                                      row.get("github_username")) if v}
    if row.get("canvas_user_id"):
        keys.add(("canvas", row["canvas_user_id"]))
    if row.get("moodle_participant"):
        keys.add(("moodle", row["moodle_participant"]))
    if row.get("email"):
        keys.add(("email", _key(row["email"])))
    if row.get("github_username"):
        keys.add(("github", _key(row["github_username"])))
    keys |= {("name", k) for k in name_keys(row.get("name", ""))}
    return keys


def _members(person):
    """The submitters of one submission, each as a person of their own: a group's name, student_id and email
    fields hold one value per member, joined with "; " (Gradescope's `:submitters:`); one person otherwise."""
    fields = {f: str(person.get(f, "")).split("; ") for f in ("student", "student_id", "email") if person.get(f)}
    n = max((len(v) for v in fields.values()), default=1)
    if n < 2 or any(len(v) != n for v in fields.values()):
        return [person]
    return [{**person, **{f: v[k] for f, v in fields.items()}} for k in range(n)]


def _person_keys(sid, person):
    """The keys to look a submission up by, most trusted first: the LMS's own ids, student ids, e-mails, names.

    Canvas's user id and Moodle's participant id are matched only with the same column of a roster
    exported from that LMS (they are no student number). A GitHub username (GitHub Classroom's repositories) is
    chosen by the student: it is matched only with a roster's GitHub username column, as GitHub compares
    usernames (letter case aside), never with a name, a student number, a login of the school or an e-mail
    (`Bob-Smith` is no claim on the row of "Smith, Bob", `bsmith` none on the school login bsmith)."""
    if person.get("github_username"):
        return [("github", _key(u)) for u in str(person["github_username"]).split("; ") if u]
    keys = []
    platform = person.get("platform")
    if person.get("canvas_user_id"):
        keys.append(("canvas", str(person["canvas_user_id"])))
    if person.get("moodle_participant"):
        keys.append(("moodle", str(person["moodle_participant"])))
    if platform not in ("canvas", "moodle"):
        keys += [("id", _key(v)) for v in str(person.get("student_id", "")).split("; ") if v]
    if not person:  # a plain folder: the id may be a student number, a login or a name
        keys.append(("id", _key(sid)))
    keys += [("email", _key(e)) for e in str(person.get("email", "")).split("; ") if e]
    names = [n for n in str(person.get("student", "")).split("; ") if n] or ([sid] if not person else [])
    keys += [("name", k) for n in names for k in sorted(name_keys(n))]
    return keys


# how far a key is trusted, most first (`_person_keys`' order): where several submissions claim one row exactly,
# the claim of the most trusted kind wins (an exact student id beats an exact name), one of a kind alone
_RANK = {"canvas": 0, "moodle": 0, "github": 1, "id": 2, "email": 3, "name": 4}


def _exact(sid, person, row, kind):
    """Whether a submission's own value of the key's field is the roster's, as written (NFC, spaces squeezed)."""
    if kind in ("canvas", "moodle"):
        return True  # the LMS's own number
    if kind == "github":
        return _norm(person.get("github_username")) == _norm(row.get("github_username"))
    fields = {"id": ("student_id", "sis_user_id", "sis_login_id", "github_username"), "email": ("email",),
              "name": ("name",)}[kind]
    own = {"id": "student_id", "email": "email", "name": "student"}[kind]
    mine = set(str(person.get(own, "")).split("; ")) | ({sid} if not person else set())
    theirs = {_norm(row.get(f)) for f in fields}
    return bool({_norm(x) for x in mine if x} & (theirs - {""}))


def match_roster(people, rows, handed_in=None):
    """(people with the roster's data merged, report {matched, students, missing: [row], unmatched: [id],
    ambiguous: [{id, row, with, given_to}], not_graded: [{id, row}], members: [{id, member}],
    shared: [{kind, value, rows, left, ids}]}).

    handed_in: {id: identity} of the students who handed something in that was not graded (only a `.zip`, two
    files hwcheck would not pick between, a text entry): they claim their rows as a submission does, so such a row
    is not "missing" (no submission) but listed in `not_graded`, with the names of the entries not graded when the
    identity's `not_graded` has them (`checker.records.lms_students`: the entries the summary's "not graded" lines
    give that student); they are not among the people returned.

    people: {id: identity}. Each submission claims the row its most trusted key finds alone (a key two rows
    share decides nothing). A row one submission claims is that submission's. A row several claim goes to
    the one whose value is the roster's exactly (`jdoe` for the login `jdoe`, not `JDOE`), when exactly one
    is; among exact claims, the most trusted kind of key wins (`_RANK`: `2002.py` by the student id 2002 beats
    `Bob Jones.py` by the name of that row); else to none of them: never first-come. The others are listed as
    ambiguous and get no row (so no LMS id and no grade in an LMS export).

    A group submission (Gradescope's, `_members`) keeps every member: those the roster has with its data, the
    others as submitted, each listed in `members` (no student of the roster). A submission whose only key
    that finds rows finds several (two students of one name, matched by name) is matched to none of them and
    listed with those rows in `shared` (roster "shared"): neither they nor those rows are said to have no
    submission or no student; they are matched by hand.
    """
    index = {}
    for i, row in enumerate(rows):
        for k in _row_keys(row):
            index.setdefault(k, set()).add(i)
    handed_in = {sid: who for sid, who in (handed_in or {}).items() if sid not in people}
    everyone = {**people, **handed_in}
    claims, member_of, shared = {}, {}, {}  # member_of: {(id, row): member}; shared: {id: (key, rows)}
    for sid in sorted(everyone):
        for m, member in enumerate(_members(everyone[sid])):  # a group submission: each claims their own row
            several = None
            for k in _person_keys(sid, member):
                found = index.get(k, set())
                if len(found) > 1 and several is None:
                    several = (k, frozenset(found))
                if len(found) == 1:
                    i = next(iter(found))
                    if all(c[0] != sid for c in claims.get(i, [])):
                        claims.setdefault(i, []).append((sid, _exact(sid, member, rows[i], k[0]), _RANK[k[0]]))
                        member_of[(sid, i)] = m
                    break
            else:
                if several is not None:
                    shared.setdefault(sid, several)
    owner, ambiguous = {}, []
    for i, claimants in sorted(claims.items()):
        # the exact claims of the most trusted kind of key: a student id's beats a name's (a file named after a
        # classmate never takes the row of the classmate who handed in under their student id)
        best = min((rank for _, is_exact, rank in claimants if is_exact), default=None)
        exact = [sid for sid, is_exact, rank in claimants if is_exact and rank == best]
        winner = claimants[0][0] if len(claimants) == 1 else exact[0] if len(exact) == 1 else None
        if winner is not None:
            owner.setdefault(winner, []).append(i)
        for sid, _, _ in claimants:
            if sid != winner:
                ambiguous.append({"id": sid, "row": rows[i].get("name") or rows[i].get("student_id") or "",
                                  "with": [s for s, _, _ in claimants if s != sid], "given_to": winner})
    shared = {sid: found for sid, found in shared.items() if sid not in owner}
    merged, unmatched, members = {}, [], []
    for sid in sorted(people):
        person = dict(people[sid])
        if sid not in owner:
            unmatched.append(sid)
            person["roster"] = "shared" if sid in shared else "unmatched"
        else:
            mine = [rows[i] for i in owner[sid]]
            person.update({k: v for k, v in mine[0].items() if v and k not in ("name",)})
            person["student"] = mine[0].get("name") or person.get("student", "")
            group = _members(people[sid])
            if len(group) > 1:  # a group's members: each as the roster has them, or as submitted when it has not
                by_member = {member_of[(sid, i)]: rows[i] for i in owner[sid]}
                for field, key in (("student", "name"), ("student_id", "student_id"), ("email", "email")):
                    person[field] = "; ".join(str((by_member[m].get(key) if m in by_member else who.get(field)) or "")
                                              for m, who in enumerate(group))
                alone = [_shown_member(who) for m, who in enumerate(group) if m not in by_member]
                members += [{"id": sid, "member": who} for who in alone]
                if alone:
                    person["roster_members_unmatched"] = alone
            person["roster"] = "matched"
        merged[sid] = person
    used = {i for sid, rows_of in owner.items() if sid in people for i in rows_of}
    handed = {i: sid for sid, rows_of in owner.items() if sid in handed_in for i in rows_of}
    groups = {}
    for sid, (key, found) in sorted(shared.items()):
        if sid in people:
            groups.setdefault((key, found), []).append(sid)
    told = {i for (_, found) in groups for i in found}
    missing = [rows[i] for i in range(len(rows)) if i not in used and i not in handed and i not in told]
    not_graded = [{"id": sid, "row": _shown_row(rows[i]),
                   **({"entries": [str(n) for n in handed_in[sid]["not_graded"]]}
                      if isinstance(handed_in[sid].get("not_graded"), list) and handed_in[sid]["not_graded"] else {})}
                  for i, sid in sorted(handed.items())]
    ambiguous = [a for a in ambiguous if a["id"] in people]
    shared_out = [{"kind": key[0], "value": _shared_value(key, [rows[i] for i in sorted(found)]),
                   "rows": [_shown_row(rows[i]) for i in sorted(found)], "left": len(found - used),
                   "ids": ids} for (key, found), ids in groups.items()]
    # GitHub Classroom's repositories match only a GitHub username column (`_person_keys`): a roster without one
    # matches none of them, said once
    no_github = (any(isinstance(p, dict) and p.get("github_username") for p in everyone.values())
                 and not any(r.get("github_username") for r in rows))
    return merged, {"matched": len(used), "students": len(rows), "missing": missing, "unmatched": unmatched,
                    "ambiguous": ambiguous, "not_graded": not_graded, "members": members, "shared": shared_out,
                    **({"no_github_column": True} if no_github else {})}


def _shown_member(member):
    """A group's member as submitted: the name, then the id in brackets."""
    who = member.get("student") or member.get("email") or member.get("student_id") or ""
    extra = ", ".join(str(x) for x in (member.get("student_id"), member.get("email")) if x and x != who)
    return who + (f" ({extra})" if extra else "")


def _shared_value(key, found):
    """What the rows of a key they share have in common, as the roster writes it (a name, an e-mail, an id)."""
    field = {"name": "name", "email": "email", "github": "github_username"}.get(key[0], "student_id")
    values = [_norm(r.get(field)) for r in found if r.get(field)]
    return values[0] if values else key[1]


def _shown_row(row):
    """A roster row as the TA's lines name it: the name, then its other ids in brackets."""
    who = row.get("name") or row.get("email") or row.get("student_id") or ""
    extra = ", ".join(x for x in (row.get("student_id"), row.get("email")) if x and x != who)
    return who + (f" ({extra})" if extra else "")


def roster_lines(report, people):
    """The TA's lines about the roster: how many matched, who has no submission, which submissions match no one."""
    if not report:
        return []
    handed = [h for h in report.get("not_graded") or [] if isinstance(h, dict)]
    same = sum(int(g.get("left") or 0) for g in report.get("shared") or [] if isinstance(g, dict))
    lines = [f"roster: {report['matched']} of {report['students']} students have a submission"
             + (f" graded; {len(handed)} more handed in one that was not graded" if handed else "")
             + (f"; {same} more share a name with another student of the roster: matched by hand (below)"
                if same else "")]
    if report.get("no_github_column"):
        lines.append("roster: it has no GitHub username column (`github_username`, as GitHub Classroom's roster "
                     "export has): a repository's username is the student's own choice, so it is matched with that "
                     "column only, never with a name, a login or an id; add the column to match the repositories")
    for row in report["missing"]:
        lines.append(f"roster: no submission from {_shown_row(row)}")
    for h in handed:  # the batch's summary lists the reason first, under "not graded", by the entries' names
        names = [str(n) for n in h.get("entries") or [] if n] if isinstance(h.get("entries"), list) else []
        shown = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0] if names else h.get("id")
        lines.append(f"roster: {h.get('row')} handed in {shown}, which {'were' if len(names) > 1 else 'was'} not "
                     f"graded (see {'their' if len(names) > 1 else 'its'} \"not graded\" line"
                     f"{'s' if len(names) > 1 else ''} above)")
    ambiguous = {a.get("id"): a for a in report.get("ambiguous") or [] if isinstance(a, dict)}
    for sid, a in sorted(ambiguous.items()):
        given = (f"it went to {a['given_to']}, whose id is the roster's exactly" if a.get("given_to") else
                 "it went to none of them, as none is the roster's exactly")
        lines.append(f"roster: submission {sid} matches the roster's {a.get('row')} as "
                     f"{', '.join(map(str, a.get('with') or []))} does: {given}; {sid} gets none of the roster's "
                     f"data (and no grade in an LMS export)")
    shared = set()
    for group in report.get("shared") or []:
        if not isinstance(group, dict):
            continue
        ids = [str(i) for i in group.get("ids") or []]
        shared |= set(ids)
        what = {"name": "name", "email": "e-mail", "github": "GitHub username"}.get(group.get("kind"), "id")
        rows = group.get("rows") or []
        lines.append(f"roster: {len(rows)} students of the roster share the {what} {group.get('value')} "
                     f"({'; '.join(map(str, rows))}), and submission{'s' if len(ids) > 1 else ''} {', '.join(ids)} "
                     f"{'carry' if len(ids) > 1 else 'carries'} it: hwcheck cannot tell whose is whose, so "
                     f"{'they get' if len(ids) > 1 else 'it gets'} none of the roster's data (grades.csv names them as "
                     f"submitted); match them by hand, or give --roster a roster exported from the LMS (its ids "
                     f"tell them apart where the files carry them)")
    for m in report.get("members") or []:
        if isinstance(m, dict):
            lines.append(f"roster: {m.get('member')}, a member of the group submission {m.get('id')}, matches no "
                         f"student of the roster (kept in grades.csv as submitted)")
    for sid in report["unmatched"]:
        if sid in ambiguous or sid in shared:
            continue
        who = (people.get(sid) or {}).get("student")
        lines.append(f"roster: submission {sid}" + (f" ({who})" if who and who != sid else "")
                     + " matches no student of the roster")
    return lines
