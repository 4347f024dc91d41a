"""The output folder of a batch: where each submission's files are, writing and reading them back.

What it is for: everything `hwcheck grade` (`checker.batch`), the Dask
executor (`checker.cluster`) and `hwcheck merge` (`checker.shard`) need to
know about OUTDIR's per-submission files:

    OUTDIR/<id>.json                       the full (TA) scorecard
    OUTDIR/gradescope/<id>/results.json    Gradescope's results.json
    OUTDIR/<id>.raw.json                   pytest-json-report's report (keep_raw only)

- their paths (`scorecard_path`, `results_path`, `raw_path`, `gradebook_path`);
- `write_submission`: one submission's files, each atomic, the scorecard
  last (a scorecard that exists is complete, which is what resume relies on);
- `is_current`: whether a scorecard is a complete grading of this very
  submission by this grader (resume), and `restore_results` for a current
  scorecard whose results.json is gone;
- reading the scorecards back (`scorecards_in`, `collect_scorecards`,
  `other_assignments`), the folder lock (`lock_outdir`) and the temporary
  files a kill left behind (`remove_stale_temps`).

What it is not: grading (`checker.grading`, `checker.batch`), the
gradebook's CSVs (`checker.outputs`, `checker.gradebook`), or the JSON
formats themselves (`checker.scorecard`, `checker.gradescope`).
"""

import collections
import json
import os
import re

from checker import __version__
from checker.atomic import read_json, write_json_atomic
from checker.errors import HwcheckError
from checker.gradescope import make_failure_results, make_results
from checker.scorecard import SCHEMA_VERSION, STATUSES
from checker.spec import spec_sha256
from checker.submission_files import sha256_of

__all__ = ["scorecard_path", "results_path", "raw_path", "gradebook_path", "write_submission", "is_current",
           "restore_results", "remove_stale_temps", "scorecards_in", "other_assignments", "collect_scorecards",
           "lock_outdir"]

_STALE_TMP = re.compile(r"^\..+\.(json|csv)\.[^.]+\.tmp$")   # checker.atomic's temporary names


# ---------------------------------------------------------------------------
# where things are
# ---------------------------------------------------------------------------

def scorecard_path(outdir, sid):
    return os.path.join(outdir, f"{sid}.json")


def results_path(outdir, sid):
    return os.path.join(outdir, "gradescope", sid, "results.json")


def raw_path(outdir, sid):
    return os.path.join(outdir, f"{sid}.raw.json")


def gradebook_path(outdir):
    return os.path.join(outdir, "grades.csv")


# ---------------------------------------------------------------------------
# one submission's files
# ---------------------------------------------------------------------------

def write_submission(outdir, sid, card, *, keep_raw, raw=None):
    """Write one submission's files, the scorecard last (it marks the submission done)."""
    if keep_raw and raw is not None:
        try:
            write_json_atomic(raw_path(outdir, sid), raw)
        except ValueError:  # NaN or the like in the raw report: keep the text JSON can hold
            write_json_atomic(raw_path(outdir, sid), json.loads(json.dumps(raw, default=str)
                                                                .replace("NaN", "null")))
    elif not keep_raw:
        try:
            os.unlink(raw_path(outdir, sid))  # a raw report of an older grading would mislead
        except FileNotFoundError:
            pass
    internal = (card.get("grader") or {}).get("internal_error")
    results = (make_failure_results(f"hwcheck could not grade this submission: {internal}",
                                    execution_time=card.get("duration_s", 0))
               if internal else make_results(card))
    write_json_atomic(results_path(outdir, sid), results)
    write_json_atomic(scorecard_path(outdir, sid), card)


# ---------------------------------------------------------------------------
# resume
# ---------------------------------------------------------------------------

def is_current(outdir, sid, path, assignment, mode, *, keep_raw=False, sha=None, spec_sha=None):
    """True when OUTDIR/<id>.json is a complete scorecard of this very submission and grader.

    Same assignment, submission id and sha256, grader version, mode and spec
    sha256, a known status, and no internal error of hwcheck. With keep_raw,
    the raw report must be there too.
    """
    card = read_json(scorecard_path(outdir, sid))
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
            and (not keep_raw or os.path.isfile(raw_path(outdir, sid))))


def restore_results(outdir, sid):
    """A current scorecard whose results.json is gone or broken: rewrite it from the scorecard."""
    if isinstance(read_json(results_path(outdir, sid)), dict):
        return
    write_json_atomic(results_path(outdir, sid), make_results(read_json(scorecard_path(outdir, sid))))


def remove_stale_temps(outdir):
    """Temporary files of atomic writes cut short by a kill (none of ours is running now)."""
    folders = [outdir]
    gs = os.path.join(outdir, "gradescope")
    if os.path.isdir(gs):
        folders += [os.path.join(gs, d) for d in os.listdir(gs)]
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if _STALE_TMP.match(name):
                try:
                    os.unlink(os.path.join(folder, name))
                except OSError:
                    pass


# ---------------------------------------------------------------------------
# reading OUTDIR back, and holding it
# ---------------------------------------------------------------------------

def scorecards_in(outdir):
    """Every scorecard in OUTDIR, whatever its assignment (other JSON files, raw reports included, are not)."""
    try:
        names = sorted(os.listdir(outdir))
    except OSError:
        return
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        card = read_json(os.path.join(outdir, name))
        if (isinstance(card, dict) and card.get("schema_version") == SCHEMA_VERSION
                and isinstance(card.get("assignment"), str) and isinstance(card.get("submission"), dict)
                and isinstance(card.get("questions"), list)):
            yield card


def other_assignments(outdir, assignment):
    """{assignment: count} of the scorecards in OUTDIR that belong to another assignment."""
    return collections.Counter(c["assignment"] for c in scorecards_in(outdir) if c["assignment"] != assignment)


def collect_scorecards(outdir, assignment):
    """Every scorecard of `assignment` in OUTDIR (other JSON files, raw reports included, are ignored)."""
    return [c for c in scorecards_in(outdir) if c["assignment"] == assignment]


def lock_outdir(outdir):
    """Hold OUTDIR/.hwcheck.lock: two batches writing one OUTDIR would undo each other's work."""
    import fcntl
    fd = os.open(os.path.join(outdir, ".hwcheck.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise HwcheckError(f"another `hwcheck grade` is writing into {outdir}; wait for it to finish") from None
    return fd
