"""The output folder of a batch: where each submission's files are, writing and reading them back.

What it is for: everything `hwcheck grade` (`checker.records.batch`), the Dask
executor (`checker.platforms.cluster`) and `hwcheck merge` (`checker.records.shard`) need to
know about OUTDIR's per-submission files:

    OUTDIR/<id>.json                       the full (TA) scorecard
    OUTDIR/gradescope/<id>/results.json    Gradescope's results.json
    OUTDIR/<id>.raw.json                   pytest-json-report's report (keep_raw only)

(<id> as `checker.records.ids.file_name` writes it: the id, escaped where Windows could not hold it.)

- their names and paths (`scorecard_path`, `results_path`, `raw_path`,
  `gradebook_path`): every path built from an id goes through
  `checker.records.owned` (a plain name that stays inside OUTDIR, ValueError
  otherwise), and is where hwcheck's own file of that name is: OUTDIR may be
  the students' download folder, so a student's `alice.json` (or a folder of
  that name) is never taken for alice's scorecard (`checker.records.owned`);
- `write_submission`: one submission's files, each atomic, the scorecard
  last (a scorecard that exists is complete, which is what resume relies on);
- `is_current`: whether a scorecard is a complete grading of this very
  submission by this grader (resume), and `restore_results` for a current
  scorecard whose results.json is gone;
- reading the scorecards back (`read_scorecard`, `scorecards_in`,
  `collect_scorecards`, `other_assignments`): only the ones hwcheck recorded
  writing, with the bytes it wrote (a scorecard-shaped `notes.json`, a forged
  `alice.json` are not read); `unreadable_scorecards` names those recorded
  whose file is no longer what was written (emptied, cut short); the folder lock (`lock_outdir`, OUTDIR's
  `.hwcheck.lock`, whatever the key) and the temporary files a kill left behind
  (`remove_stale_temps`, every name `checker.records.atomic` gives them);
- `foreign_scorecards` / `foreign_key_line`: the scorecards of OUTDIR that hwcheck wrote under another key
  (another HWCHECK_KEY, account or machine: their records are in another state folder), which this key
  cannot verify, so `grade --only`, `grade --resume`, `export` and `merge` refuse before they would rewrite
  the gradebook without them.

What it is not: grading (`checker.records.grading`, `checker.records.batch`), the
gradebook's CSVs (`checker.records.outputs`, `checker.records.gradebook`), or the JSON
formats themselves (`checker.judging.scorecard`, `checker.render.gradescope`).
"""

import collections
import json
import os

from checker._version import __version__

from checker.records import owned, owned_records
from checker.records.atomic import is_temp_name
from checker.errors import HwcheckError
from checker.render.gradescope import make_failure_results, make_results
from checker.records.ids import file_name
from checker.judging.scorecard import SCHEMA_VERSION, STATUSES
from checker.spec import spec_sha256
from checker.running.submission_files import sha256_of

__all__ = ["scorecard_name", "results_name", "raw_name", "scorecard_path", "results_path", "raw_path",
           "gradebook_path", "write_submission", "is_current", "restore_results", "remove_stale_temps",
           "read_scorecard", "scorecard_ids", "unreadable_scorecards",
           "scorecards_in", "other_assignments", "collect_scorecards", "lock_outdir", "unlock_outdir",
           "batch_running", "foreign_scorecards", "foreign_key_line"]


# ---------------------------------------------------------------------------
# where things are
# ---------------------------------------------------------------------------

def _plain(sid):
    sid = str(sid)
    owned_records.join_inside(".", sid)  # ValueError for an id that is no plain file name (`../x`, `a/b`)
    return file_name(sid)  # a name Windows holds too: `CON`, `a:b` escaped (checker.records.ids)


def scorecard_name(sid):
    return f"{_plain(sid)}.json"


def results_name(sid):
    return f"gradescope/{_plain(sid)}/results.json"


def raw_name(sid):
    return f"{_plain(sid)}.raw.json"


def scorecard_path(outdir, sid):
    return owned.path_of(outdir, scorecard_name(sid))


def results_path(outdir, sid):
    return owned.path_of(outdir, results_name(sid))


def raw_path(outdir, sid):
    return owned.path_of(outdir, raw_name(sid))


def gradebook_path(outdir):
    return owned.path_of(outdir, "grades.csv")


# ---------------------------------------------------------------------------
# one submission's files
# ---------------------------------------------------------------------------

def write_submission(outdir, sid, card, *, keep_raw, raw=None):
    """Write one submission's files, the scorecard last (it marks the submission done)."""
    if keep_raw and raw is not None:
        try:
            owned.write_json(outdir, raw_name(sid), raw, kind="raw", sid=sid)
        except ValueError:  # NaN or the like in the raw report: keep the text JSON can hold
            owned.write_json(outdir, raw_name(sid), json.loads(json.dumps(raw, default=str).replace("NaN", "null")),
                             kind="raw", sid=sid)
    elif not keep_raw:
        owned.remove(outdir, raw_name(sid))  # a raw report of an older grading would mislead (only hwcheck's)
    internal = (card.get("grader") or {}).get("internal_error")
    results = (make_failure_results(f"hwcheck could not grade this submission: {internal}",
                                    execution_time=card.get("duration_s", 0))
               if internal else make_results(card))
    owned.write_json(outdir, results_name(sid), results, kind="results", sid=sid)
    try:
        owned.write_json(outdir, scorecard_name(sid), card, kind="scorecard", sid=sid)
    except (OSError, ValueError):  # a full disk: no results.json of a grading with no scorecard (an older
        try:  # scorecard's own is written again from it by `restore_results`)
            owned.remove(outdir, results_name(sid))
        except OSError:
            pass
        raise


def write_results(outdir, sid, results):
    """Gradescope's results.json of one submission (hwcheck's own file)."""
    return owned.write_json(outdir, results_name(sid), results, kind="results", sid=sid)


def read_results(outdir, sid):
    """The results.json hwcheck wrote for `sid`, None when it did not (or it changed since)."""
    return owned.read_json(outdir, results_name(sid), "results")


# ---------------------------------------------------------------------------
# resume
# ---------------------------------------------------------------------------

def read_scorecard(outdir, sid):
    """The scorecard hwcheck wrote for `sid` (a dict), or None: whatever else sits at OUTDIR/<id>.json is not read."""
    try:
        card = owned.read_json(outdir, scorecard_name(sid), "scorecard")
    except ValueError:
        return None
    if (isinstance(card, dict) and isinstance(card.get("submission"), dict)
            and str(card["submission"].get("id")) == str(sid)):
        return card
    return None


def is_current(outdir, sid, path, assignment, mode, *, keep_raw=False, sha=None, spec_sha=None):
    """True when OUTDIR/<id>.json is a complete scorecard of this very submission and grader.

    Written by hwcheck (its record, with the bytes it wrote: `checker.records.owned`),
    same assignment, submission id and sha256, grader version, mode and spec
    sha256, a known status, and no internal error of hwcheck. With keep_raw,
    the raw report hwcheck wrote must be there too.
    """
    card = read_scorecard(outdir, sid)
    if not isinstance(card, dict) or card.get("schema_version") != SCHEMA_VERSION:
        return False
    sub, grader = card.get("submission"), card.get("grader")
    if not isinstance(sub, dict) or not isinstance(grader, dict):
        return False
    try:
        sha = sha or sha256_of(path)
    except OSError:
        return False
    return (card.get("assignment") == assignment and sub.get("id") == sid and sub.get("sha256") == sha
            and grader.get("version") == __version__ and grader.get("mode") == mode
            and grader.get("spec_sha256") == (spec_sha or spec_sha256(assignment))
            and card.get("status") in STATUSES and not grader.get("internal_error")
            and not grader.get("student_kit")
            and (not keep_raw or owned.read_bytes(outdir, raw_name(sid), "raw") is not None))


def restore_results(outdir, sid):
    """A current scorecard whose results.json is gone, broken or not hwcheck's: rewrite it from the scorecard."""
    if isinstance(read_results(outdir, sid), dict):
        return
    write_results(outdir, sid, make_results(read_scorecard(outdir, sid)))


def remove_stale_temps(outdir):
    """Temporary files of atomic writes cut short by a kill (none of ours is running now), in every folder
    hwcheck writes in: OUTDIR, its Gradescope folders and its state folder."""
    folders = [outdir]
    gs = owned.folder_of(outdir, "gradescope")
    if gs and os.path.isdir(gs) and not os.path.islink(gs):
        folders += [gs] + [os.path.join(gs, d) for d in os.listdir(gs)]
    state = owned_records.state_dir(outdir)
    folders += [state, os.path.join(state, "records")]  # not set-aside/: what is there is not hwcheck's
    for folder in folders:
        if os.path.islink(folder) or not os.path.isdir(folder):
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = os.path.join(folder, name)
            if is_temp_name(name) and os.path.isfile(path) and not os.path.islink(path):
                try:
                    os.unlink(path)
                except OSError:
                    pass


# ---------------------------------------------------------------------------
# reading OUTDIR back, and holding it
# ---------------------------------------------------------------------------

def scorecards_in(outdir):
    """Every scorecard hwcheck wrote into OUTDIR, whatever its assignment (no other file is read)."""
    for _name, sid in owned_records.records(outdir, "scorecard"):
        if sid is None:
            continue
        card = read_scorecard(outdir, sid)
        if (isinstance(card, dict) and card.get("schema_version") == SCHEMA_VERSION
                and isinstance(card.get("assignment"), str) and isinstance(card.get("questions"), list)):
            yield card


def unreadable_scorecards(outdir):
    """The ids whose scorecard hwcheck recorded writing into OUTDIR and whose file there is no longer it (emptied,
    cut short, changed since: not the bytes written, or not a scorecard). `read_scorecard` reads none of them;
    `hwcheck export` names them, and `grade --resume` grades them again (`is_current`). A scorecard whose file
    is gone (deleted) is none of them."""
    out = []
    for name, sid in owned_records.records(outdir, "scorecard"):
        path = owned.path_of(outdir, name)
        if sid is not None and os.path.isfile(path) and not os.path.islink(path):
            if read_scorecard(outdir, sid) is None:
                out.append(sid)
    return sorted(out)


def scorecard_ids(outdir):
    """The ids whose scorecard hwcheck recorded writing into OUTDIR (a student's `jdoe.json` is none of them)."""
    return sorted({sid for _name, sid in owned_records.records(outdir, "scorecard") if sid is not None})


def other_assignments(outdir, assignment):
    """{assignment: count} of the scorecards in OUTDIR that belong to another assignment."""
    return collections.Counter(c["assignment"] for c in scorecards_in(outdir) if c["assignment"] != assignment)


def collect_scorecards(outdir, assignment):
    """Every scorecard of `assignment` hwcheck wrote into OUTDIR (no other file is read)."""
    return [c for c in scorecards_in(outdir) if c["assignment"] == assignment]


def batch_running(outdir):
    """Is a `hwcheck grade` (or merge, or export) writing into OUTDIR now (it holds the folder's lock), under any
    HWCHECK_KEY? Asked, never waited for: the lock is taken and let go at once."""
    import fcntl
    try:
        fd = _open_lock(outdir)
    except OSError:  # no lock file: never locked since an hwcheck of this kind wrote here
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


LOCK_FILE = ".hwcheck.lock"  # OUTDIR's lock, whatever the key (`lock_outdir`)


def _open_lock(outdir, create=False):
    """A descriptor of OUTDIR's lock file (made with `create`), never followed through a link. A file, not the
    folder itself: an exclusive `flock` on NFS (a cluster's shared OUT) is a POSIX lock, which needs a descriptor
    open for writing, and a folder cannot be opened so."""
    flags = os.O_RDWR | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
    return os.open(os.path.join(outdir, LOCK_FILE), flags, 0o644)


def unlock_outdir(outdir, fd, made=False):
    """Let go of `lock_outdir`'s lock. made: this command made OUTDIR (the lock made it): an OUTDIR that holds
    nothing but the state folder the lock made is removed first, while the lock is held (a grade refused after it
    took the lock, such as one of a folder with no submissions, leaves no folder it made)."""
    try:
        state = owned_records.state_dir(outdir)
        if made and sorted(os.listdir(outdir)) == sorted([os.path.basename(state), LOCK_FILE]) \
                and os.listdir(state) == []:
            os.rmdir(state)
            os.unlink(os.path.join(outdir, LOCK_FILE))
            os.rmdir(outdir)
    except OSError:
        pass
    finally:
        os.close(fd)


def lock_outdir(outdir):
    """Hold OUTDIR's lock: two batches writing one OUTDIR would undo each other's work. The lock is OUTDIR's
    own (a `flock` on `OUTDIR/.hwcheck.lock`), not its state folder's, which is named by the key: two runs under
    different HWCHECK_KEYs (one exported in another terminal) write one grades.csv and manual.csv all the same, so
    the second is refused whatever its key. A run killed (SIGKILL, a power cut) holds nothing: the kernel lets go
    of its lock with the process; the lock file stays, empty, and is no one's lock. OUTDIR and its state folder
    are made."""
    import fcntl
    os.makedirs(outdir, exist_ok=True)
    fd = _open_lock(outdir, create=True)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.makedirs(owned_records.state_dir(outdir), exist_ok=True)  # after the lock: a refused run makes none
    except BlockingIOError:
        os.close(fd)
        raise HwcheckError(f"another `hwcheck grade` is writing into {outdir}; wait for it to finish") from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def foreign_scorecards(outdir):
    """The ids of the scorecards in OUTDIR that hwcheck recorded writing under another key (a state folder
    `.hwcheck-<12 hex>` not this key's: another HWCHECK_KEY, account or machine) and that this key does not
    verify: their record cannot be checked here, so none of them is read (`scorecards_in`), and a command that
    writes the gradebook from OUTDIR would write it without them. Only the records' names are read, to refuse."""
    import re
    mine = os.path.basename(owned_records.state_dir(outdir))
    try:
        names = os.listdir(outdir)
    except OSError:
        return []
    ours, found = set(scorecard_ids(outdir)), set()
    for folder in names:
        if folder == mine or not re.fullmatch(r"\.hwcheck-[0-9a-f]{12}", folder):
            continue
        records = os.path.join(outdir, folder, "records")
        try:
            entries = os.listdir(records) if not os.path.islink(records) else []
        except OSError:
            continue
        for n in entries:
            try:
                with open(os.path.join(records, n), encoding="utf-8") as f:
                    rec = json.load(f)
            except (OSError, ValueError):
                continue
            if (isinstance(rec, dict) and rec.get("kind") == "scorecard" and isinstance(rec.get("id"), str)
                    and isinstance(rec.get("path"), str) and rec["id"] not in ours
                    and os.path.lexists(os.path.join(outdir, *rec["path"].split("/")))):
                found.add(rec["id"])
    return sorted(found)


def foreign_key_line(outdir, doing):
    """The refusal of a command on an OUTDIR holding scorecards another key wrote (`foreign_scorecards`), '' when
    it holds none. doing: what the command would do with them unread ("`hwcheck export` would write ...")."""
    ids = foreign_scorecards(outdir)
    if not ids:
        return ""
    return (f"{outdir} holds {len(ids)} scorecard{'s' if len(ids) != 1 else ''} that hwcheck wrote under another "
            f"key ({', '.join(ids[:3])}{', ...' if len(ids) > 3 else ''}), which this shell's key cannot verify "
            f"(HWCHECK_KEY is {'another' if os.environ.get('HWCHECK_KEY') else 'not set'} here), nor the batch's "
            f"seed and Canvas column kept with them: {doing}. Set HWCHECK_KEY to the key that graded {outdir} (the "
            f"one every shard and the merge used: every later command on it needs it), then run it again; nothing "
            f"was written to {outdir}")
