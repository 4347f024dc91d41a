"""Where each scorecard of an output folder was graded from, for the `--resume` that regrades it.

What it is for: an OUT may be fed by more than one folder (a Canvas download, then a second download of the late
submissions only, graded into it with `--resume`, as docs/tas.md says). After the grading tests change (a weight
in spec.toml or a test), `grade DIR --resume` regrades the scorecards of DIR's submissions; those graded from
another folder used to keep the old tests (and `export` then refused for ever), and a student whose later attempt
came from the other download was regraded on the older attempt DIR holds (h102: 90 became 56.25). Each scorecard
records the file it was graded from (`submission.path`, `submission.sha256`), so:

- `own_file(card, outdir)`: that file (or folder), where it is still there with the bytes graded; else None (a
  copy staged into OUT/.lms/ read in OUTDIR's own .lms/: an OUT moved keeps its staged copies).
- `stale_own_files(outdir, assignment, mode, timeout, devices, keep_raw)`: `regrading(id)`, the own file of a
  scorecard that `--resume` would grade again (other grading tests, another hwcheck, other --timeout/--device, a
  crash) where that file is still there as graded; `checker.records.lms_attempts.older_than_graded` regrades a
  Canvas student's later attempt from it rather than the older attempt the folder holds.
- `carried(outdir, entries, assignment, ...)`: the scorecards of submissions not in the folder graded that
  `--resume` would grade again, as entries [(id, own file)] graded with the batch (same seed), and the TA's lines
  (those whose file is gone keep their grades, named).
- `note_folder(outdir, record, directory, latest)`: the folders graded into OUT, the latest last (students.json's
  `folders`; an `--only` appeal makes no folder the latest); `regrade_command(...)`: the one `grade ... --resume`
  that brings every scorecard current (the latest folder graded, which, with the two above, regrades the others
  from their own files), and the files it cannot reach, for the refusal of `export`, `report` and `merge`
  (`checker.records.batch.graded_with_other_tests`).

- `other_settings(card, timeout, devices)`, `graded_folder(cards)`, `settings_words(cards)`: the settings a
  scorecard was graded with that differ from a batch's, the folder most scorecards were listed from, and the
  words of a `--resume` that keep their settings (importable from `checker.records.batch` too).

What it is not: the listing of a folder (`checker.records.lms`), the decision that a scorecard is current
(`checker.records.outfolder.is_current`), the batch (`checker.records.batch`), or a command line.
"""

from __future__ import annotations

import collections
import os
import shlex

from checker.records.lms_attempts import own_file  # noqa: F401 - importable here

__all__ = ["own_file", "stale_own_files", "carried", "note_folder", "latest_folder", "regrade_command",
           "other_settings", "graded_folder", "settings_words"]

SHOWN = 5  # ids named in one line, then a count
KEPT_FOLDERS = 20  # folders remembered in students.json


def other_settings(card, timeout, devices):
    """The settings (`checker.records.shard.SETTINGS`: --timeout, --device) a scorecard was graded with that
    differ from this batch's: [(setting, the scorecard's value)]; one its grader block lacks (an older hwcheck's)
    is unknown, and differs from none. `--resume` grades such a scorecard again, as one of other grading tests."""
    from checker.records.shard import setting_differs, settings_of
    now = settings_of({"timeout": timeout, "devices": [d for d in ("cpu", "cuda") if d in devices]})
    was = settings_of((card or {}).get("grader") or {})
    return [(key, was[key]) for key in now if setting_differs(was[key], now[key])]



def graded_folder(cards):
    """The folder the scorecards' submissions were listed from (the most common parent; copies hwcheck staged
    into OUT left out), or None when none is known: the DIR of a `grade DIR ... --resume` that goes on with them."""
    from checker.records.lms import STAGE
    stage = os.sep + STAGE + os.sep
    folders = collections.Counter(os.path.dirname(p) for p in (str((c.get("submission") or {}).get("path") or "")
                                                               for c in cards) if p and stage not in p)
    return folders.most_common(1)[0][0] if folders else None



def settings_words(cards):
    """` --timeout T --device D` as the scorecards were graded (the first that records them), so that the
    `--resume` a message prints keeps them and regrades none for want of them; '' where none is recorded."""
    from checker.records.shard import UNKNOWN, settings_of, shown_setting
    for c in cards:
        got = settings_of(c.get("grader") or {})
        if any(v is UNKNOWN for v in got.values()):
            continue
        words = f" {shown_setting('timeout', got['timeout'])}" if got["timeout"] is not None else ""
        if got["devices"] and tuple(got["devices"]) != ("cpu", "cuda"):
            words += f" {shown_setting('devices', got['devices'])}"
        return words
    return ""


def _regraded(outdir, sid, card, path, assignment, mode, spec_sha, keep_raw, timeout, devices):
    """Would `--resume` grade this scorecard (of this mode) again, its own file unchanged at `path`?"""
    from checker.records.outfolder import is_current
    if (card.get("grader") or {}).get("mode") != mode or card.get("assignment") != assignment:
        return False  # another mode's scorecard is the resume's notes' to say, not regraded from afar
    return not is_current(outdir, sid, path, assignment, mode, keep_raw=keep_raw, spec_sha=spec_sha) or \
        bool(other_settings(card, timeout, devices))


def stale_own_files(outdir, assignment, mode, timeout, devices, keep_raw):
    """regrading(id): the own file of OUTDIR's scorecard of `id` where `--resume` grades it again and that file is
    still there as graded, else None (see the module docstring)."""
    from checker.records.outfolder import read_scorecard
    from checker.spec import spec_sha256
    spec_sha = spec_sha256(assignment)

    def regrading(sid):
        card = read_scorecard(outdir, sid)  # only a scorecard hwcheck wrote (checker.records.owned)
        path = own_file(card, outdir) if isinstance(card, dict) else None
        if path and _regraded(outdir, sid, card, path, assignment, mode, spec_sha, keep_raw, timeout, devices):
            return path
        return None
    return regrading


def _graded_otherwise(card, spec_sha, timeout, devices):
    """Graded with other grading tests, another hwcheck, or other settings (whatever its file is now)?"""
    from checker._version import __version__
    grader = card.get("grader") or {}
    return (grader.get("spec_sha256") != spec_sha or grader.get("version") != __version__
            or bool(other_settings(card, timeout, devices)))


def _ids(sids):
    return ", ".join(sids[:SHOWN]) + (f" and {len(sids) - SHOWN} more" if len(sids) > SHOWN else "")


def carried(outdir, entries, assignment, mode, timeout, devices, keep_raw, directory):
    """([(id, own file)] of OUTDIR's scorecards of submissions not among `entries` that `--resume` grades again,
    [lines for the TA]): graded with the batch, each from the file it was graded from (another download's); those
    whose file is gone, or changed, keep their grades, named with what to do."""
    from checker.records.outfolder import collect_scorecards
    from checker.spec import spec_sha256
    listed = {sid for sid, _ in entries}
    spec_sha = spec_sha256(assignment)
    more, gone = [], []
    for card in collect_scorecards(outdir, assignment):
        sid = str((card.get("submission") or {}).get("id"))
        if sid in listed or (card.get("grader") or {}).get("mode") != mode:
            continue
        path = own_file(card, outdir)
        if path is not None:
            if _regraded(outdir, sid, card, path, assignment, mode, spec_sha, keep_raw, timeout, devices):
                more.append((sid, path))
        elif _graded_otherwise(card, spec_sha, timeout, devices):
            gone.append((sid, str((card.get("submission") or {}).get("path") or "?")))
    lines = []
    if more:
        folders = sorted({os.path.dirname(p) for _, p in more})
        lines.append(f"{len(more)} scorecard{'s' if len(more) != 1 else ''} of submissions not in {directory} "
                     f"({_ids(sorted(s for s, _ in more))}) {'were' if len(more) != 1 else 'was'} graded with other "
                     f"grading tests (or another hwcheck, other settings): --resume regrades each from the file it "
                     f"was graded from (in {_ids(folders)}), with the batch's seed")
    if gone:
        shown = [f"{sid} ({path})" for sid, path in sorted(gone)]
        lines.append(f"warning: {len(gone)} scorecard{'s' if len(gone) != 1 else ''} of submissions not in "
                     f"{directory} {'were' if len(gone) != 1 else 'was'} graded with other grading tests from files "
                     f"no longer there as graded: {_ids(shown)}; {'they keep' if len(gone) != 1 else 'it keeps'} "
                     f"the old grades (`hwcheck export` refuses until every scorecard is current): put those files "
                     f"back, or grade the folder that holds them into {outdir} with --resume")
    return more, lines


def note_folder(outdir, record, directory, latest=True):
    """Add `directory` (absolute), last, to the folders graded into OUTDIR that students.json keeps (`record`
    about to be written by `checker.records.lms.record`); latest=False (an `--only` appeal, which grades some
    students of it only): the folders as they were, `directory` added first where it is not among them, so it
    never becomes the latest folder."""
    from checker.records.lms import read_students
    here = os.path.abspath(directory)
    old = read_students(outdir).get("folders")
    kept = [f for f in (old if isinstance(old, list) else []) if isinstance(f, str)]
    if not latest:
        record["folders"] = (([] if here in kept else [here]) + kept)[-KEPT_FOLDERS:]
        return
    record["folders"] = ([f for f in kept if f != here] + [here])[-KEPT_FOLDERS:]


def latest_folder(outdir, cards):
    """The folder graded into OUTDIR last that is still there (students.json's `folders`), else the folder most
    scorecards were graded from (`graded_folder`), else None."""
    from checker.records.lms import read_students
    folders = read_students(outdir).get("folders")
    for folder in reversed(folders if isinstance(folders, list) else []):
        if isinstance(folder, str) and os.path.isdir(folder):
            return folder
    return graded_folder(cards)


def _inside(path, folder):
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def regrade_command(outdir, assignment, cards, stale, public):
    """The `hwcheck grade ... --resume` that regrades every scorecard of `stale` (graded with other grading tests):
    the latest folder graded into OUTDIR, whose `--resume` regrades the scorecards of other folders from their own
    files (`carried`, `stale_own_files`); where some of those files are gone (or changed outside that folder),
    what to do about them follows, in parentheses."""
    folder = latest_folder(outdir, cards) or "<the folder graded>"
    words = ["hwcheck", "grade", folder, "-a", assignment, "-o", str(outdir), "-j", "1", "--resume"]
    command = " ".join(shlex.quote(w) for w in words + (["--public"] if public else [])) + settings_words(stale)
    gone = []
    for card in stale:
        path = str((card.get("submission") or {}).get("path") or "")
        if own_file(card, outdir) is None and not (path and os.path.exists(path) and (_inside(path, folder) or _staged(
                outdir, path))):
            gone.append(f"{(card.get('submission') or {}).get('id')} ({path or '?'})")
    if gone:
        command += (f" (it regrades every scorecard from the file it was graded from, but {len(gone)} of those files "
                    f"{'are' if len(gone) != 1 else 'is'} no longer there as graded: {_ids(sorted(gone))}; put "
                    f"{'them' if len(gone) != 1 else 'it'} back first, or grade the folder that holds "
                    f"{'them' if len(gone) != 1 else 'it'} into {outdir} with --resume too)")
    return command


def _staged(outdir, path):
    """Is `path` a student's files that hwcheck staged into OUTDIR/.lms/ (rewritten when the student is listed)?"""
    from checker.records.lms import STAGE
    return _inside(path, os.path.join(outdir, STAGE))
