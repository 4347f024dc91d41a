"""Grade a folder in slices where no scheduler is wanted, and merge the slices' output folders.

What it is for: `hwcheck grade DIR ... --shard I/N` (a GitHub Actions
matrix, a SLURM array: each job grades one slice into its own OUTDIR) and
`hwcheck merge OUT1 OUT2 ... -o OUT` (one output folder and gradebook).

- `shard_entries(entries, i, n)`: the I-th of N deterministic slices of a
  folder's submissions (round robin over the ids in sorted order: every job
  that lists the same folder gets the same slices, of sizes that differ by
  at most one). Every shard must use the same seed; `check_shard_seed` says
  so when hidden tests would draw a random one per job.
- `check_shard_folder(outdir, shard)`: a shard's own OUTDIR is graded as that shard only (never another
  slice, nor the whole class with --only).
- `write_shard_info(outdir, ...)`: OUTDIR/shard.json, which slice of which
  folder this is, so that `merge` can name missing, incomplete or foreign
  shards. `grade` writes it as its batch starts (finished false, with the
  `--resume` command that goes on with it) and again when the batch is done
  (finished true): a shard whose job was killed is named incomplete, with how
  many of its submissions are graded and how to finish it, never missing.
- `merge(sources, dest)`: copies the scorecards, Gradescope files and raw
  reports into `dest` (atomically, the scorecard last), with who each student
  is (the folder's layout, roster and identical-code groups: every shard's
  students.json) and the grades a person typed into a shard's manual.csv
  (appended to `dest`'s; a grade corrected in the shard since the last merge replaces dest's row only where
  no TA changed that row in dest, else the conflict is said: `_merge_manual`, MERGED_MANUAL); a scorecard
  regraded in `dest` since the last merge (an appeal, `--only` there) is kept and named, never replaced by
  the shard's (`_dest_regraded`, MERGED_CARDS: the scorecards merge wrote there), and writes
  grades.csv, answers.csv and manual.csv there as a batch would; it refuses folders of
  mixed assignments, seeds, modes, grading tests, settings (`SETTINGS`: --timeout, --device; unknown in an
  older hwcheck's scorecards, never refused on) or hwcheck versions, and a
  submission graded in two of them. Crashed scorecards (hwcheck's own failures) are merged and named
  (`MergeResult.crashed`, with their folder's `--resume`): `hwcheck merge` exits 1 for them. It reads
  of each folder only what hwcheck recorded writing there (`checker.records.owned`: a shard graded under
  another account or machine needs the same key, `HWCHECK_KEY`), and a
  scorecard whose id is no plain file name (`../x`) is left out with a note:
  nothing is written outside `dest`.

What it is not: grading (`checker.records.batch`), or a scheduler (`checker.platforms.cluster`
uses Dask for that).
"""

import hashlib
import os

from checker._version import __version__

from checker.records import owned
from checker.errors import HwcheckError

__all__ = ["SHARD_FILE", "parse_shard", "shard_entries", "check_shard_seed", "check_shard_folder",
           "write_shard_info", "merge", "settings_of", "setting_differs", "shown_setting", "SETTINGS",
           "MergeResult"]

SHARD_FILE = "shard.json"


def parse_shard(text):
    """'2/4' -> (2, 4); a ValueError saying the form otherwise."""
    i, sep, n = str(text).partition("/")
    if sep and i.strip().isdigit() and n.strip().isdigit():
        i, n = int(i), int(n)
        if 1 <= i <= n:
            return i, n
    raise ValueError(f"{text!r}: --shard takes I/N with 1 <= I <= N, e.g. --shard 2/4")


def _folder_key(entries):
    return hashlib.sha256("\0".join(sid for sid, _ in sorted(entries)).encode("utf-8", "surrogateescape")
                          ).hexdigest()


def shard_entries(entries, index, count):
    """The entries of slice `index` (1-based) of `count`: every count-th id in sorted order."""
    return sorted(entries)[index - 1::count]


def check_shard_seed(public, seed):
    """Hidden tests with no --seed would draw one seed per job: shards of one class need the same one."""
    if not public and seed is None:
        raise HwcheckError("--shard needs --seed in hidden mode, the same for every shard (each job would "
                           "otherwise draw its own, and students would get different inputs), e.g. --seed 20260")


def check_shard_folder(outdir, shard):
    """A grade into a shard's own OUTDIR (its shard.json says slice I/N) as another slice, or as none (--only
    alice there regraded alice, of slice 3/3, into slice 1/3's folder, and the merge then refused both as
    overlapping shards: a TA's probe, h44), is refused (HwcheckError), before anything is written."""
    if not os.path.isdir(outdir):
        return
    info = owned.read_json(outdir, SHARD_FILE, "shard")
    if not isinstance(info, dict) or not isinstance(info.get("index"), int) or not isinstance(info.get("count"), int):
        return
    held = (info["index"], info["count"])
    if shard is not None and tuple(shard) == held:
        return
    asked = "without --shard" if shard is None else f"as shard {shard[0]}/{shard[1]}"
    raise HwcheckError(f"{outdir} holds shard {held[0]}/{held[1]} of a class (`hwcheck merge` joins the shards' "
                       f"folders): grading into it {asked} would put another slice's submissions there, and the merge "
                       f"would refuse them as overlapping; grade it with --shard {held[0]}/{held[1]} (an --only id of "
                       f"another slice is graded in that slice's folder), or regrade in the merged folder (nothing "
                       f"was written to {outdir})")


def write_shard_info(outdir, index, count, all_entries, assignment, seed, *, graded, finished, resume=None):
    """OUTDIR/shard.json: this slice, the folder it was cut from, and how it is graded. `grade` writes it as its
    batch starts (finished False; resume: the command that goes on with it) and when the batch is done
    (finished True); graded: how many submissions this slice has."""
    owned.write_json(outdir, SHARD_FILE, {
        "hwcheck_shard": 1, "index": index, "count": count, "folder": _folder_key(all_entries),
        "submissions": len(all_entries), "in_shard": graded, "assignment": assignment, "seed": seed,
        "version": __version__, "finished": bool(finished), "resume": resume}, kind="shard")


def _incomplete_line(src, info, have):
    """The TA's line for a shard whose batch did not finish (killed, stopped by a time limit or a full disk)."""
    of = info.get("in_shard")
    of = f" of {of}" if isinstance(of, int) and not isinstance(of, bool) else ""
    again = info.get("resume") if isinstance(info.get("resume"), str) else (
        f"hwcheck grade <the folder graded> -a {info.get('assignment')} -o {src} --shard "
        f"{info.get('index')}/{info.get('count')} --seed {info.get('seed')} --resume")
    return (f"shard {info.get('index')}/{info.get('count')} ({src}) is incomplete: its `hwcheck grade` was "
            f"stopped with {have}{of} submissions graded{f' (those {have} are merged)' if have else ''}; finish "
            f"it with `{again}`, then merge again")


def _other_settings_line(what, src, value, first, theirs, infos, dest, assignment):
    """The merge's refusal of shards graded with other settings (`SETTINGS`): which, and how to regrade."""
    info = dict(infos).get(src) or {}
    again = info.get("resume") if isinstance(info.get("resume"), str) else (
        f"hwcheck grade <the folder graded> -a {assignment} -o {src} --resume")
    return (f"{src} was graded with {shown_setting(what, value)} and {first} with {shown_setting(what, theirs)}: "
            f"{SETTINGS[what]} decides grades (a submission slow under one limit times out under a shorter one; a "
            f"device's tests count only where asked for), so shards of one batch must be graded alike, and nothing "
            f"was merged into {dest}; regrade {src} as {first} was graded: `{again}` with "
            f"{shown_setting(what, theirs)} instead of {shown_setting(what, value)} (--resume regrades every "
            f"scorecard graded with another setting), then merge again")


def _said(how):
    return ", ".join(f"{k} {'unknown' if v is UNKNOWN else v}" for k, v in how.items())


def _crashed_line(src, info, ids, cards):
    """The TA's line for the crashed scorecards of one merged folder: hwcheck's own failures, merged as 0."""
    shard = f" (shard {info.get('index')}/{info.get('count')})" if info else ""
    again = info.get("resume") if info and isinstance(info.get("resume"), str) else None
    if again is None:
        folders = sorted({os.path.dirname(str((c.get("submission") or {}).get("path") or "")) for c in cards} - {""})
        assignment = cards[0].get("assignment") if cards else "<assignment>"
        again = (f"hwcheck grade {folders[0] if len(folders) == 1 else '<the folder graded>'} -a {assignment} "
                 f"-o {src} --resume")
    shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
    return (f"{len(ids)} scorecard{'s' if len(ids) != 1 else ''} of {src}{shard} crashed (hwcheck's own failures, "
            f"not the students': a Dask worker that died twice, a grader that could not start), merged as 0: "
            f"{shown}; grade {'it' if len(ids) == 1 else 'them'} again with `{again}` (it keeps every current "
            f"scorecard and regrades the crashed), then merge again")


def _refuse_other_tests(assignment, grading, found, infos, stopped, dest):
    """Shards graded with other grading tests than the assignment's now (`checker.spec.spec_sha256`): their
    merged gradebook would judge manual.csv's grades by the spec.toml as it is and the scorecards' points by the
    old one, so the merge is refused (HwcheckError) before `dest` is written, naming each shard's `--resume`."""
    from checker.spec import spec_sha256
    try:
        sha = spec_sha256(assignment)
    except Exception:  # noqa: BLE001 - an assignment this install lacks: the merge says so itself
        return
    if grading.get("grading tests (spec_sha256)") == sha:
        return
    shards = {src: info for src, info in infos} | {src: info for src, info, _ in stopped}
    folders = sorted({src for src, _ in found.values()})
    again = [shards[src]["resume"] if isinstance(shards.get(src, {}).get("resume"), str) else
             f"hwcheck grade <the folder graded> -a {assignment} -o {src} --resume" for src in folders]
    raise HwcheckError(f"the {len(found)} scorecards of {', '.join(folders)} were graded with other grading tests "
                       f"than {assignment}'s now (its spec.toml, a test or helper file, or the reference changed "
                       f"since): the merged gradebook would judge manual.csv's grades by the spec.toml as it is now "
                       f"and those scorecards' points by the old one, mixing the two, so nothing was merged into "
                       f"{dest}; regrade each folder first with the batch's seed ({'; '.join(again)}), then merge "
                       f"again")


class MergeResult:
    def __init__(self, dest, assignment):
        self.dest, self.assignment = dest, assignment
        self.cards = 0
        self.notes = []
        self.missing = []  # "I/N" of the shards not merged
        self.incomplete = []  # "I/N" of the shards given whose batch did not finish
        self.crashed = []  # ids of the crashed scorecards merged (hwcheck's own failures: `--resume` regrades them)
        self.kept = []  # ids whose scorecard in dest was graded after the shard's (an appeal regraded there): kept
        self.gradebook = None


UNKNOWN = object()  # a setting an older hwcheck's scorecard does not record: never refused on


def _grading_of(card):
    g = card.get("grader") or {}
    return {"hwcheck version": g.get("version"), "mode": g.get("mode"), "seed": g.get("seed"),
            "grading tests (spec_sha256)": g.get("spec_sha256"), **settings_of(g)}


SETTINGS = {"timeout": "the time budget (--timeout)", "devices": "the devices (--device)"}


def settings_of(grader):
    """What else than the tests and the seed decides a grade, as `grader` (a scorecard's) records it: {"timeout":
    the --timeout given (None: the assignment's own limit), "devices": the devices --device asked for, as a
    tuple}; a setting an older hwcheck's scorecard lacks, or any of a crashed one's, is UNKNOWN."""
    out = {}
    for key in SETTINGS:
        value = grader.get(key, UNKNOWN) if not grader.get("internal_error") else UNKNOWN
        if key == "timeout" and value is not UNKNOWN:
            value = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else value
        if key == "devices" and value is not UNKNOWN:
            value = tuple(sorted(value)) if isinstance(value, list) else value
        out[key] = value
    return out


def shown_setting(key, value):
    """A setting as the command line gives it: `--timeout 2`, `no --timeout (the assignment's own limit)`."""
    if key == "timeout":
        return "no --timeout (the assignment's own limit)" if value is None else f"--timeout {value:g}"
    words = {("cpu",): "cpu", ("cuda",): "cuda", ("cpu", "cuda"): "all"}
    return f"--device {words.get(value, value)}"


def setting_differs(value, other):
    """Whether two values of a setting differ, an unknown one (an older scorecard's) differing from none."""
    return value is not UNKNOWN and other is not UNKNOWN and value != other


def _merge_students(sources, dest):
    """dest's students.json from the shards' (each shard's lists the whole folder it was cut from): who each
    student is (an LMS export's names, ids and LATE marks; the roster), the identical-code groups, what was
    not graded. The first shard's, with the students and entries of the others added."""
    from checker.records.lms import STUDENTS_JSON, read_students
    merged = {}
    for src in sources:
        data = read_students(src)
        if not data:
            continue
        if not merged:
            merged = dict(data)
            continue
        people = dict(data.get("students") or {}) if isinstance(data.get("students"), dict) else {}
        people.update(merged.get("students") or {})
        merged["students"] = people
        for key in ("not_graded", "ungraded", "identical"):
            mine, theirs = merged.get(key) or [], data.get(key) or []
            if isinstance(mine, list) and isinstance(theirs, list):
                merged[key] = mine + [x for x in theirs if x not in mine]
    if merged:
        owned.write_json(dest, STUDENTS_JSON, merged, kind="students")


MERGED_CARDS = ".merged-cards.json"  # in dest: each scorecard merge wrote there, as {sid: its mark}


def _card_mark(card):
    """What says one scorecard apart: a digest of all it records (another grading of the same file differs, if
    only by its duration), and the sha256 of the submission it graded."""
    import json
    text = json.dumps(card, sort_keys=True, default=str).encode("utf-8", "surrogateescape")
    sub = card.get("submission") if isinstance(card.get("submission"), dict) else {}
    return {"digest": hashlib.sha256(text).hexdigest(), "sha256": sub.get("sha256")}


def _dest_regraded(dest, assignment, found):
    """The ids whose scorecard in `dest` was graded there after the shard's (an appeal regraded with --only in
    the merged folder): {sid: the TA's line}, kept, never overwritten by the shard's; and dest's record of the
    scorecards merge wrote before (MERGED_CARDS). A dest scorecard is taken for graded there when it is not the
    one merge last wrote for that id (the record says so) or, without a record (a folder merged by an older
    hwcheck), when it graded another file (submission sha256) than the shard's."""
    from checker.records import outfolder
    kept = owned.read_json(dest, MERGED_CARDS, "merged-cards")
    record = kept.get("cards") if isinstance(kept, dict) and isinstance(kept.get("cards"), dict) else {}
    record = {sid: m for sid, m in record.items() if isinstance(m, dict)}
    mine = {str(c["submission"].get("id")): c for c in outfolder.collect_scorecards(dest, assignment)}
    out = {}
    for sid, (src, card) in found.items():
        here = mine.get(sid)
        if here is None:
            continue
        ours, theirs, before = _card_mark(here), _card_mark(card), record.get(sid)
        if ours["digest"] == theirs["digest"]:
            continue
        if before is not None:
            if ours["digest"] == before.get("digest"):  # dest's is merge's own: the shard's (changed or not) taken
                continue
        elif ours["sha256"] == theirs["sha256"]:  # no record, the same file graded: the shard's taken
            continue
        files = ("another file" if ours["sha256"] != theirs["sha256"] else "the same file") + \
            f" (sha256 {str(ours['sha256'])[:12]}, the shard's {str(theirs['sha256'])[:12]})"
        both = before is not None and theirs["digest"] != before.get("digest")
        out[sid] = (f"{sid}: {os.path.join(dest, outfolder.scorecard_name(sid))} was graded in {dest} after the "
                    f"merge (an appeal regraded there, {files}): kept, not {src}'s"
                    + (f" (which was also regraded since the last merge)" if both else "")
                    + f"; a later grade of {sid} belongs in {dest} too (`hwcheck grade <the folder> -a "
                      f"{assignment} -o {dest} --only {sid}`)")
        record[sid] = before if before is not None else theirs
    return out, record


MERGED_MANUAL = ".merged-manual.json"  # in dest: each grade merge took from a shard's manual.csv, as it was then


def _value(row):
    return {"points": row["points"], "comment": row["comment"]}


def _shown_row(v):
    return f"{v['points']:g}" + (f" ({v['comment']!r})" if v.get("comment") else "")


def _take_from_shard(path, dest, theirs, notes):
    """Rewrite dest's rows in manual.csv with the shard's later grades: theirs [(sid, question, dest's row, the
    shard's row, src)]; a copy of manual.csv as it was is kept first (the TA's earlier values are never lost)."""
    from checker.records.atomic import write_text_atomic
    from checker.records.manual import _rewrite_cells
    from checker.records.manual_read import _read_text
    copy = owned.keep_copy(dest, path)
    text, bom = _read_text(path)
    text, done = _rewrite_cells(text, {mine["line"]: {2: row["points"], 3: row["comment"]}
                                       for _, _, mine, row, _ in theirs})
    if done:
        write_text_atomic(path, text, encoding="utf-8-sig" if bom else "utf-8")
    for sid, qid, mine, row, src in theirs:
        if mine["line"] in done:
            notes.append(f"manual.csv: {sid} {qid} was changed in {src}'s manual.csv since the last merge: "
                         f"{os.path.join(dest, 'manual.csv')} line {mine['line']} now gives {_shown_row(row)} (it "
                         f"gave {_shown_row(mine)}; manual.csv as it was is kept at {copy})")
        else:  # the row moved since it was read (edited meanwhile): the shard's grade is said, not lost
            notes.append(f"manual.csv: {sid} {qid} was changed to {_shown_row(row)} in {src}'s manual.csv, but "
                         f"{os.path.join(dest, 'manual.csv')} line {mine['line']} is no longer its row: not "
                         f"applied; merge again")
    return {(sid, qid) for sid, qid, mine, _, _ in theirs if mine["line"] in done}


def _merge_manual(sources, dest, spec, found):
    """Bring into dest's manual.csv the grades a person typed into a shard's manual.csv for a submission that
    shard graded: a row dest lacks is appended (an adjustment: unless that very row is there). Where dest has a
    row of that submission and question, what merge brought from the shards before (dest's MERGED_MANUAL)
    decides: the shard's row changed since and dest's did not (no TA edited it there): the shard's is the TA's
    latest word, taken and said; both changed, differently: dest's is kept and the conflict said (never
    overwritten silently); else dest's stands (the TA's edit there, or the grade merged before). Without a
    record of the earlier merge (a folder merged by an older hwcheck) a differing row is a conflict. Returns
    notes for the TA."""
    from checker.records.manual import MANUAL_CSV, ensure_rows, manual_path, read_manual
    path = manual_path(dest)
    if not os.path.lexists(path) and not owned.has_record(dest, MANUAL_CSV):
        # made here by hwcheck, for the TA: recorded so, as `grade` records its own (else taken for a stranger's)
        path = owned.place_kept(dest, MANUAL_CSV, record=True) or path
    have, _ = read_manual(path, spec)
    kept = owned.read_json(dest, MERGED_MANUAL, "merged-manual")
    merged = kept.get("rows") if isinstance(kept, dict) and isinstance(kept.get("rows"), dict) else {}
    record = {sid: dict(qs) for sid, qs in merged.items() if isinstance(qs, dict)}
    rows, notes, theirs = [], [], []
    for src in sources:
        ids = {sid for sid, (where, _) in found.items() if where == src}
        entries, problems = read_manual(manual_path(src), spec, ids)
        notes += [f"{src}: {p}" for p in problems]
        for sid, typed in sorted(entries.items()):
            for row in typed:
                there = have.get(sid, [])
                if row["kind"] == "adjustment":
                    if not any(r["question"] == row["question"] and r["points"] == row["points"]
                               and r["comment"] == row["comment"] for r in there):
                        rows.append(_manual_row(sid, row))
                    continue
                qid, new = row["question"], _value(row)
                mine = next((r for r in there if r["question"] == qid), None)
                if mine is None:
                    rows.append(_manual_row(sid, row))
                    record.setdefault(sid, {})[qid] = new
                    continue
                before = record.get(sid, {}).get(qid)
                if _value(mine) == new or new == before:  # the same grade, or the shard's unchanged since
                    record.setdefault(sid, {})[qid] = new
                elif before is not None and _value(mine) == before:  # the shard's changed, dest's not: taken
                    theirs.append((sid, qid, mine, row, src))
                else:  # both changed since (or no record of the earlier merge): dest's kept, said
                    since = "" if before is None else f", both changed since the last merge ({_shown_row(before)})"
                    notes.append(f"manual.csv: conflict: {sid} {qid} is {_shown_row(new)} in {src}'s manual.csv "
                                 f"and {_shown_row(mine)} in {os.path.join(dest, 'manual.csv')} line "
                                 f"{mine['line']}{since}: the merged folder's is kept; make them agree (edit "
                                 f"either file), then merge again")
    if theirs:
        for sid, qid in _take_from_shard(path, dest, theirs, notes):
            record.setdefault(sid, {})[qid] = next(_value(row) for s_, q_, _, row, _ in theirs
                                                   if (s_, q_) == (sid, qid))
    if rows:
        ensure_rows(path, [], spec, extra=rows)
        notes.append(f"manual.csv: {len(rows)} grade{'s' if len(rows) > 1 else ''} typed into the shards' "
                     f"manual.csv added to {os.path.join(dest, 'manual.csv')}")
    if record != merged:
        owned.write_json(dest, MERGED_MANUAL, {"rows": record}, kind="merged-manual")
    return notes


def _manual_row(sid, row):
    points = row["points"]  # a number, so a penalty of -2 stays one (csvfile.cell escapes text "-2")
    return [sid, row["question"], int(points) if float(points).is_integer() else points, row["comment"]]


def _merge_exports(sources, dest):
    """Canvas's column title the shards kept (`--canvas`, or a roster's), kept in `dest` too where they agree:
    without it the merged canvas.csv was titled with the assignment's id, a new column in Canvas."""
    from checker.records.exports import EXPORTS_JSON
    kept = {}
    for src in sources:
        data = owned.read_json(src, EXPORTS_JSON, "exports")
        if isinstance(data, dict) and isinstance(data.get("canvas_title"), str) and data["canvas_title"].strip():
            kept.setdefault(data["canvas_title"], data)
    if len(kept) > 1:
        return [f"the shards name Canvas's column differently ({', '.join(repr(t) for t in sorted(kept))}): give the "
                f"one to use with `hwcheck export {dest} --canvas TITLE`"]
    if kept:
        owned.write_json(dest, EXPORTS_JSON, next(iter(kept.values())), kind="exports")
    return []


def merge(sources, dest):
    """Merge the output folders `sources` into `dest`; return a MergeResult. Raises HwcheckError on a mix."""
    from checker.records import outfolder
    from checker.records.outputs import Gradebook
    from checker.spec import load_spec

    if not sources:
        raise HwcheckError("merge needs at least one output folder")
    dest_real = os.path.realpath(dest)
    found = {}  # id -> (source, card)
    assignment, grading, first = None, None, None
    infos = []
    stopped = []  # (source, its shard.json, scorecards it holds) of the shards whose batch did not finish
    skipped = []
    for src in sources:
        if not os.path.isdir(src):
            raise HwcheckError(f"{src} is not a folder")
        if os.path.realpath(src) == dest_real:
            raise HwcheckError(f"{src} is the output folder itself: merge into a new folder")
        cards = list(outfolder.scorecards_in(src))
        info = owned.read_json(src, SHARD_FILE, "shard")
        info = info if isinstance(info, dict) and info.get("hwcheck_shard") == 1 else None
        if info is not None:
            infos.append((src, info))
        if info is not None and info.get("finished") is False:  # its batch was stopped: said below
            stopped.append((src, info, len(cards)))
        elif not cards:
            raise HwcheckError(f"{src} holds no scorecards that hwcheck wrote (is it an output folder of `hwcheck "
                               f"grade`, graded under this account? Shards graded elsewhere need the same "
                               f"HWCHECK_KEY in every job and here)")
        for card in cards:
            try:
                outfolder.scorecard_name(card["submission"].get("id"))
            except ValueError:
                skipped.append(f"{src}: a scorecard of id {str(card['submission'].get('id'))!r}, which is no plain "
                               f"file name, was left out")
                continue
            if assignment is None:
                assignment, first = card["assignment"], src
            if card["assignment"] != assignment:
                raise HwcheckError(f"{src} holds scorecards of {card['assignment']}, {first} of {assignment}: "
                                   f"merge one assignment at a time")
            how = _grading_of(card)
            if grading is None:
                grading, set_by = dict(how), {what: src for what in how}
            for what, value in how.items():
                if what in SETTINGS:
                    if grading[what] is UNKNOWN:  # the first scorecard that says it
                        grading[what], set_by[what] = value, src
                    elif setting_differs(value, grading[what]):
                        raise HwcheckError(_other_settings_line(what, src, value, set_by[what], grading[what],
                                                                infos, dest, assignment))
                elif value != grading[what] and not (what == "seed" and (card.get("grader") or {}).get(
                        "internal_error") and value is None):
                    raise HwcheckError(f"{src} was graded with {what} {value}, {first} with {grading[what]}: "
                                       f"shards of one batch must be graded alike (regrade one with the other's "
                                       f"--seed and the same hwcheck)")
            sid = str(card["submission"].get("id"))
            if sid in found:
                raise HwcheckError(f"{sid} is graded in both {found[sid][0]} and {src}: do the shards overlap "
                                   f"(the same --shard twice, or two different folders)?")
            found[sid] = (src, card)
    if not found:  # shards stopped before their first scorecard, or scorecards of ids no file can have
        raise HwcheckError("; ".join([_incomplete_line(src, info, have) for src, info, have in stopped] + skipped)
                           + f" (nothing was merged into {dest})")
    if infos:
        counts = {info.get("count") for _, info in infos}
        folders = {info.get("folder") for _, info in infos}
        if len(counts) > 1 or len(folders) > 1:
            raise HwcheckError("these shards were cut from different folders or into different numbers of "
                               "slices: " + ", ".join(f"{s} ({i.get('index')}/{i.get('count')})" for s, i in infos))
    _refuse_other_tests(assignment, grading, found, infos, stopped, dest)
    others = outfolder.other_assignments(dest, assignment) if os.path.isdir(dest) else {}
    if others:
        raise HwcheckError(f"{dest} already holds scorecards of {', '.join(sorted(others))}: choose another folder")
    foreign = outfolder.foreign_key_line(dest, "the merge would write its grades.csv without them") \
        if os.path.isdir(dest) else ""
    if foreign:  # its own scorecards, graded under another key, would be left out of its gradebook
        raise HwcheckError(foreign)
    os.makedirs(dest, exist_ok=True)
    lock = outfolder.lock_outdir(dest)
    try:
        for card in outfolder.collect_scorecards(dest, assignment):
            sid = str(card["submission"].get("id"))
            how = _grading_of(card)
            if sid not in found and any(setting_differs(v, grading[k]) if k in SETTINGS else v != grading[k]
                                        for k, v in how.items()):
                raise HwcheckError(f"{dest} already holds {sid}, graded otherwise ({_said(how)}): "
                                   f"merge into a new folder")
        result = MergeResult(dest, assignment)
        result.notes += skipped
        kept_here, cards_record = _dest_regraded(dest, assignment, found)
        for sid, note in sorted(kept_here.items()):
            result.kept.append(sid)
            result.notes.append(note)
        for sid, (src, card) in sorted(found.items()):
            if sid in kept_here:
                continue
            raw = owned.read_bytes(src, outfolder.raw_name(sid), "raw")
            if raw is not None:
                owned.write_text(dest, outfolder.raw_name(sid), raw.decode("utf-8", "surrogateescape"), kind="raw",
                                 sid=sid, encoding="utf-8")
            results = outfolder.read_results(src, sid)
            if isinstance(results, dict):
                outfolder.write_results(dest, sid, results)
            owned.write_json(dest, outfolder.scorecard_name(sid), card, kind="scorecard", sid=sid)  # last: done
            cards_record[sid] = _card_mark(card)
            result.cards += 1
        owned.write_json(dest, MERGED_CARDS, {"cards": cards_record}, kind="merged-cards")
        if infos:
            count = infos[0][1].get("count")
            have = {info.get("index") for _, info in infos}
            missing = [i for i in range(1, (count or 0) + 1) if i not in have]
            result.missing = [f"{i}/{count}" for i in missing]
            if missing:
                result.notes.append(f"shards {', '.join(f'{i}/{count}' for i in missing)} are missing: their "
                                    f"submissions are not in {dest}")
        for src, info, have in stopped:  # given, yet not finished: incomplete, never "missing"
            result.incomplete.append(f"{info.get('index')}/{info.get('count')}")
            result.notes.append(_incomplete_line(src, info, have))
        shards = dict(infos)
        for src in sources:  # hwcheck's own failures in a folder merged: no grades, named with their --resume
            crashed = sorted((sid, card) for sid, (where, card) in found.items()
                             if where == src and card.get("status") == "crashed")
            if crashed:
                result.crashed += [sid for sid, _ in crashed]
                result.notes.append(_crashed_line(src, shards.get(src), [sid for sid, _ in crashed],
                                                  [card for _, card in crashed]))
        spec = load_spec(assignment)
        _merge_students(sources, dest)
        result.notes += _merge_exports(sources, dest)
        result.notes += _merge_manual(sources, dest, spec, found)
        book = Gradebook(dest, spec, outfolder.collect_scorecards(dest, assignment), list(found))
        book.ensure_manual()
        result.gradebook = book.write(final=True)
        result.notes += book.problems
        return result
    finally:
        os.close(lock)
