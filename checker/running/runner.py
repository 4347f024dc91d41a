"""Grade one submission: load it in a worker, run the assignment's tests, build the scorecard.

What it is for: the library function behind `hwcheck check` and each
submission of `hwcheck grade`. A `Grader` owns the warm zygote and runs
pytest in-process (torch and the grading tests are imported once per
process, not once per submission), with the plugin and pytest-json-report's
plugin object (the report stays in memory).

What it is not: a batch scheduler (`batch`) or a CLI (`cli`).
"""

import contextlib
import importlib.util
import io
import os
import platform
import secrets
import subprocess
import shutil
import sys
import tempfile
import time

import pytest

from checker._version import __version__
from checker.errors import HwcheckError
from checker.running.freetext import find_answers
from checker.worker.sources import list_units
from checker.running.plugin import HwcheckPlugin, cuda_available
from checker.running.ref_cache import RefCache
from checker.running.sandbox import Limits, SubmissionHandle
from checker.running import session as pytest_session
from checker.running.session import without_autoload
from checker.running.submission_files import file_source, secret_paths, sha256_of
from checker.running.zygote_client import Zygote
from checker.judging.scorecard import build_scorecard
from checker.spec import assignment_ids, infer_assignment, inference_note, load_spec, spec_sha256, grading_test_files, tests_path, uses_torch

__all__ = ["Grader", "environment", "run_pytest", "submission_id", "skipped_in_load", "left_out_places"]

# Plugins are not autoloaded from entry points (run_pytest): a plugin of the TA's environment (pytest-timeout,
# pytest-rerunfailures, ...) has no say in a grade, and pytest does not scan every installed distribution per
# submission (a third of a grade's time, profiled). The JSON report's options come from its module, which
# run_pytest passes as a plugin object (`-p module` would make pytest look for it among the entry points).
PYTEST_ARGS = ["-q", "--tb=no", "-s", "-p", "no:logging", "-p", "no:warnings", "-p", "no:stepwise", "-p", "no:cacheprovider", "-p", "no:benchmark",
               "-p", "no:randomly", "-p", "no:xdist", "-p", "no:hypothesispytest",
               "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:doctest", "-p", "no:pastebin",
               "-p", "no:junitxml", "-p", "no:faulthandler", "-p", "no:metadata", "-p", "no:unittest",
               "-p", "no:python_path", "-p", "no:setuponly", "-p", "no:setupplan",
               # one value each (nargs='+'): "--json-report-omit=a,b" omitted nothing, a field named "a,b"
               "--json-report-omit", "collectors", "keywords", "log", "streams", "warnings",
               "--json-report-file=none"]


def submission_id(path):
    """The id of a submission: its file name without the extension (a folder's name), always valid
    Unicode: bytes of a name that are not UTF-8 (a Windows zip's cp1252 `café`) are shown as `\\xe9`, so
    the id can be written to CSV, JSON and a terminal (the path itself still opens the file)."""
    base = os.path.basename(os.path.abspath(path).rstrip("/"))
    base = os.fsencode(base).decode("utf-8", "backslashreplace")
    return os.path.splitext(base)[0] if os.path.isfile(path) else base


def cuda_names():
    """The GPUs' names from nvidia-smi (never initialises CUDA here: forked graders may need it), or None."""
    global _CUDA_NAMES
    if _CUDA_NAMES is False:
        names = None
        if shutil.which("nvidia-smi") and os.environ.get("CUDA_VISIBLE_DEVICES", "x") != "":
            try:
                out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                                     capture_output=True, text=True, timeout=20, check=False).stdout
                names = [line.strip() for line in out.splitlines() if line.strip()] or None
            except (OSError, subprocess.SubprocessError):
                names = None
        _CUDA_NAMES = names
    return _CUDA_NAMES


_CUDA_NAMES = False


def environment():
    """Versions of the grading side, read without importing torch, and the GPUs present (read once per process:
    importlib.metadata lists every folder of sys.path for each version it reads)."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        from importlib.metadata import PackageNotFoundError, version

        def ver(pkg):
            try:
                return version(pkg)
            except PackageNotFoundError:
                return None
        _ENVIRONMENT = {"python": platform.python_version(), "torch": ver("torch"), "numpy": ver("numpy"),
                        "platform": platform.platform(), "cuda": cuda_names()}
    return dict(_ENVIRONMENT)


_ENVIRONMENT = None


def run_pytest(args, plugins):
    """pytest.main(args, plugins) with no plugin autoloaded from an entry point (PYTEST_DISABLE_PLUGIN_AUTOLOAD,
    set for the call only): only `plugins` and those `args` name with -p take part."""
    import pytest_jsonreport.plugin as json_report_options  # its pytest_addoption: --json-report-file and -omit
    with without_autoload():
        return pytest.main(args, plugins=[json_report_options, *plugins])


KIT_HAS_NO_HIDDEN = ("this is the student kit: it has neither the hidden tests nor the reference "
                     "solutions, so it cannot grade in hidden mode; grade with the full hwcheck, "
                     "or add --public")


def is_student_kit(spec):
    """True when this hwcheck is the student kit for `spec` (recorded answers, no reference)."""
    try:
        return _replay_for(spec) is not None
    except HwcheckError:
        return False


def _replay_for(spec):
    """The recorded reference answers when this is a student kit (no reference package), else None."""
    try:
        if importlib.util.find_spec(spec["reference"]) is not None:
            return None
    except ModuleNotFoundError:
        pass
    from checker.running.recorded import load_recording
    recording = load_recording(spec)
    if recording is None:
        raise HwcheckError(f"neither the reference solutions ({spec['reference']}) nor their recorded answers "
                           f"are installed: this hwcheck cannot check {spec['id']}")
    return recording


def _status(handle, spec):
    """graded, or why not: the worker's own verdict, else load_failed when nothing of the assignment loaded."""
    if handle.status != "graded":
        return handle.status
    wanted = {n for q in spec["questions"] for n in q["names"]}
    if not handle.load_ok or (wanted and not wanted & set(handle.names)):
        # nothing loaded because a statement ran out of time (a top-level loop): say timeout, as a TA expects
        stopped = any(m.get("kind") == "timeout" for m in handle.load_messages)
        return "timeout" if stopped else "load_failed"
    return "graded"


def _answer_source(path, secrets):
    """Where written answers are read: a file submission that is a link is read where it points (as it is
    graded), unless that is inside a secret path; links inside a folder submission are never followed."""
    if os.path.islink(path) and os.path.isfile(path):
        return file_source(path, secrets) or path  # (find_answers never follows the link itself)
    return path


ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz", ".rar", ".7z")


def _archives_in(path):
    """", only the archive hw.zip: hand in (or unpack) the files themselves" where a folder with no .py or .ipynb
    file holds archives (a student who zipped the homework for an upload: the grader does not unpack them)."""
    try:
        found = sorted(n for n in os.listdir(path) if n.lower().endswith(ARCHIVES) and not n.startswith("."))
    except OSError:
        return ""
    if not found:
        return ""
    shown = ", ".join(n for n in found[:3]) + (", ..." if len(found) > 3 else "")
    return (f", only the archive{'s' if len(found) > 1 else ''} {shown}, which the grader does not unpack: hand in "
            f"the .py or .ipynb files themselves (unpacked), not an archive of them")


def nothing_defined(path, names, spec):
    """The load message of a submission that ran cleanly but defines none of the assignment's names."""
    wanted = [n for q in spec["questions"] for n in q["names"]]
    shown = os.path.basename(os.path.normpath(path))
    own = [n for n in names if not n.startswith("_")]
    asked = ", ".join(f"`{n}`" for n in wanted[:5]) + (", ..." if len(wanted) > 5 else "")
    if os.path.isdir(path) and not list_units(path):
        return (f"the folder {shown} holds no .py or .ipynb file (a submission is such a file, or a folder "
                f"of them){_archives_in(path)}; {spec['id']} asks for {asked}.")
    if not own and _notebook_json(path):
        return (f"{shown} is a Jupyter notebook (its text is a notebook's JSON) under a .py name, so it ran as "
                f"Python and defined nothing: rename it to {os.path.splitext(shown)[0]}.ipynb, or hand in the "
                f"notebook's code as Python (Jupyter: File > Download as > Python (.py)). "
                f"{spec['id']} asks for {asked}.")
    if not own:
        return (f"{shown} defines nothing: it is empty or holds no code. Did you save your work before "
                f"handing it in (Jupyter: File > Save; Colab: File > Download > .ipynb)? "
                f"{spec['id']} asks for {asked}.")
    mine = ", ".join(f"`{n}`" for n in own[:6]) + (", ..." if len(own) > 6 else "")
    return (f"{shown} defines none of the names {spec['id']} asks for ({asked}); it defines {mine}. "
            f"Is this the right file, and the right assignment?")


def _notebook_json(path):
    """Whether the .py file `path` holds a notebook's JSON (a notebook renamed, or saved under a .py name)."""
    if os.path.isdir(path) or not str(path).endswith(".py"):
        return False
    from checker.running.safe_read import MAX_NOTEBOOK_BYTES, Refused, read_bytes
    from checker.worker.sources import notebook_json
    try:  # parsed within the loader's bounds for a notebook (NotebookError is a ValueError)
        data = notebook_json(read_bytes(path, limit=MAX_NOTEBOOK_BYTES).decode("utf-8-sig", errors="replace"))
    except (Refused, ValueError, RecursionError):
        return False
    return isinstance(data, dict) and ("cells" in data or "worksheets" in data)


# the loader's kinds that leave code out (other_file: a def of one file replaced by another file's, graded instead)
_SKIPPING = ("syntax_error", "error", "exit", "timeout", "training", "crash", "other_file")


def skipped_in_load(messages):
    """The first line of each load message that left some of the student's code out (for grades.csv's note): a
    statement that raised, did not parse, exited, ran past its time or crashed the worker, a training loop, a
    def replaced by another file's (a scratch copy beside the homework, graded instead)."""
    return [line[:160] + ("..." if len(line) > 160 else "") for _, line in _leaving_out(messages)]


def _leaving_out(messages):
    """(message, its first line) of each load message of a kind that left code out (_SKIPPING)."""
    for m in messages:
        if m.get("kind") in _SKIPPING:
            yield m, str(m.get("text", "")).split("\n", 1)[0].strip()


MAX_LEFT_OUT = 10  # places of left-out code a scorecard keeps (CI annotates them: checker.render.report)


def left_out_places(messages):
    """Where the loader left code out, as places a CI annotation can point at: [{"file", "line"?, "cell"?,
    "text"}] for each load message of a kind that left code out (a statement that raised, did not parse,
    exited, ran past its time, crashed the worker, a def replaced by another file's), a training loop aside
    (skipped on purpose: it is not a fault). The messages come from the worker: each value is checked for its
    type and cut to a bound, and what does not fit is left out."""
    out = []
    for m, text in _leaving_out(messages):
        if m.get("kind") == "training" or len(out) >= MAX_LEFT_OUT:
            continue
        file = m.get("file")
        if not isinstance(file, str) or not file or len(file) > 300 or not text:
            continue
        place = {"file": file}
        for key in ("cell", "line"):
            n = m.get(key)
            if type(n) is int and 1 <= n < 10**7:
                place[key] = n
        place["text"] = text[:300] + ("..." if len(text) > 300 else "")
        out.append(place)
    return out


def _loosest_limits(timeout=None):
    """Limits for loading before the assignment is known: the most generous of every assignment's, so
    that inferring the assignment never makes `check` stricter than `check -a` or `grade`."""
    specs = [Limits.from_spec(load_spec(aid), timeout) for aid in assignment_ids()]
    fields = ("call_s", "submission_s", "cell_s", "memory_mb", "reply_mb")
    return Limits(**{f: max(getattr(lim, f) for lim in specs) for f in fields})


class Grader:
    """Grades submissions one after another with one warm zygote."""

    def __init__(self, *, mode="public", seed=None, devices=("cpu", "cuda"), timeout=None,
                 extra_secrets=(), zygote=None, keep_raw=False, warm_meta=False, pytest_args=(), ref_cache=True,
                 reuse_session=True):
        # the zygote first: it imports torch in the background while this process goes on (checker.running.zygote_client)
        self._own_zygote = zygote is None
        self.zygote = zygote or Zygote(warm_meta=warm_meta)
        # the zygote warms the meta device before forking a worker of a torch assignment (checker.worker.zygote):
        # at once where the caller knows it grades one, else from the first such grade on
        self.warm_meta = warm_meta
        self.mode = mode
        self.seed = seed if seed is not None else (1234 if mode == "public" else secrets.randbits(31))
        self.devices = devices
        self.timeout = timeout
        self.keep_raw = keep_raw
        self.pytest_args = list(pytest_args)  # e.g. ["-k", "patchify"] to run a subset (benchmarks, debugging)
        self.record = None  # a dict to record the reference's answers into (checker.platforms.kit)
        # the reference's answers to this grader's inputs, kept from one submission to the next (checker.running.ref_cache)
        self.ref_cache = RefCache() if ref_cache else None
        # one pytest session per assignment, its tests collected once (checker.running.session); else a
        # pytest.main per submission
        self.reuse_session = reuse_session and pytest_session.available()
        self._sessions = {}
        self.secrets = secret_paths(extra_secrets)
        self._cuda = None  # asked once, at the first grade (cuda_state)
        self._scratch = None  # a temp dir to remove at close(), only when the user's cache is unusable
        try:  # hypothesis would otherwise write .hypothesis/ into the user's current directory
            from hypothesis.configuration import set_hypothesis_home_dir
            home = self._hypothesis_home()
            set_hypothesis_home_dir(home)
            self.secrets = sorted({*self.secrets, os.path.realpath(home)})  # it caches the tests' constants
        except ImportError:
            pass

    def _hypothesis_home(self):
        """Where hypothesis keeps its cache (the grading tests use no example database): one folder
        in the user's cache, reused by every run, so a grader killed with SIGKILL leaves nothing new
        behind in /tmp; a temp dir removed at close() where that cache cannot be written."""
        cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        home = os.path.join(cache, "hwcheck", "hypothesis")
        try:
            os.makedirs(home, mode=0o700, exist_ok=True)
            if os.access(home, os.W_OK):
                return home
        except OSError:
            pass
        self._scratch = tempfile.mkdtemp(prefix="hwcheck-grader-")
        return os.path.join(self._scratch, ".hypothesis")

    def cuda_state(self):
        """True where CUDA runs inside the worker's walls, False where there is no CUDA (or no CUDA variant is
        asked for), else why a walled worker could not compute on the GPU (checker.running.cuda_probe)."""
        if self._cuda is None:
            if "cuda" not in self.devices or not cuda_available():
                self._cuda = False
            else:
                from checker.running.cuda_probe import cuda_in_walls
                why = cuda_in_walls(self.zygote, self.secrets)
                self._cuda = True if why is None else why
        return self._cuda

    def close(self):
        for held in self._sessions.values():
            held.close()
        self._sessions.clear()
        if self._own_zygote:
            self.zygote.close()
        if self._scratch:
            shutil.rmtree(self._scratch, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def open(self, path, assignment=None):
        """Load a submission; return (handle, assignment id, note about inference or None)."""
        spec = load_spec(assignment) if assignment else None
        limits = Limits.from_spec(spec, self.timeout) if spec else _loosest_limits(self.timeout)
        self.warm_meta = self.warm_meta or bool(assignment and uses_torch(assignment))
        handle = SubmissionHandle(path, self.zygote, limits, secrets=self.secrets, sub_id=submission_id(path),
                                  warm_meta=self.warm_meta)
        # written answers are read before any student code runs, so that code cannot change what is read
        manual = {q["id"]: q.get("prompt") for a in ([assignment] if assignment else assignment_ids())
                  for q in load_spec(a)["questions"] if q["manual"]}
        handle.answer_notes = []  # what the answer finder left unread (a cap reached): told, never graded
        handle.answers = find_answers(_answer_source(path, self.secrets), manual, notes=handle.answer_notes)
        handle.load()
        note = None
        if assignment is None:
            assignment, share = infer_assignment(handle.names)
            if assignment is None:
                handle.close()
                why = [m["text"] for m in handle.load_messages if m.get("kind") in ("unreadable", "crash")][:3]
                empty = os.path.isdir(path) and not list_units(path)
                raise HwcheckError(
                    (f"{os.path.basename(os.path.normpath(path))} holds no .py or .ipynb file"
                     f"{_archives_in(path)}: give hwcheck your "
                     f"homework file, or the folder that holds it." if empty else
                     "could not tell which assignment this is: it defines none of the names of any assignment. "
                     f"Name it with -a ({', '.join(assignment_ids())}).")
                                   + "".join(f"\nLoading it said: {w}" for w in why))
            note = inference_note(handle.names)  # and any other assignment it nearly matches: a course's copy
            handle.limits = Limits.from_spec(load_spec(assignment), self.timeout)
            self.warm_meta = handle.warm_meta = self.warm_meta or uses_torch(assignment)
        return handle, assignment, note

    def grade(self, path, assignment=None):
        """Grade one submission; return its scorecard (never raises for student problems)."""
        t0 = time.perf_counter()
        handle, assignment, note = self.open(path, assignment)
        try:
            return self._grade_loaded(handle, assignment, note, t0)
        finally:
            handle.close()

    def _plugin(self, handle, spec, replay):
        return HwcheckPlugin(handle, spec, mode=self.mode, seed=self.seed, devices=self.devices,
                             record=self.record, replay=replay, ref_cache=self.ref_cache,
                             spec_sha256=spec_sha256(spec["id"]), cuda=self.cuda_state)

    def _run_tests(self, handle, spec, replay):
        """Run the grading tests on a loaded submission: (its JSON report, the plugin that labelled it)."""
        args = [*grading_test_files(spec), *PYTEST_ARGS, "--rootdir", tests_path(spec), *self.pytest_args]
        sink = io.StringIO()
        if self.reuse_session:
            sha = spec_sha256(spec["id"])  # a spec edited since (a warm notebook kernel): a fresh session
            held = self._sessions.get(spec["id"])
            if held is None or held.broken or held.spec_sha256 != sha:
                if held is not None:
                    held.close()
                held = self._sessions[spec["id"]] = pytest_session.GradingSession(args, self._plugin(None, spec, replay))
                held.spec_sha256 = sha
            if held.plugin.problems:
                raise HwcheckError(f"the grading tests of {spec['id']} did not run: " + "; ".join(held.plugin.problems))
            try:
                with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                    return held.run(handle, record=self.record, replay=replay), held.plugin
            except HwcheckError as e:
                raise HwcheckError(f"the grading tests of {spec['id']} did not run: {e}") from None
            except Exception as e:  # noqa: BLE001 - pytest's own error (an internal error of a hook)
                raise HwcheckError(f"the grading tests of {spec['id']} did not run ({type(e).__name__}: {e}): "
                                   + held.out.getvalue()[-2000:]) from None
        plugin = self._plugin(handle, spec, replay)
        from pytest_jsonreport.plugin import JSONReport
        report_plugin = JSONReport()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                exit_code = run_pytest(args, [plugin, report_plugin])
        finally:
            # one pytest.main per submission would still find the grading modules of the one before in
            # sys.modules, with whatever shared data their tests changed in place: each run imports them anew
            pytest_session.forget_grading_modules(spec)
        if plugin.problems or exit_code not in (0, 1, 5):  # 5: every test deselected
            raise HwcheckError(f"the grading tests of {spec['id']} did not run (pytest exit {exit_code}): "
                               + "; ".join(plugin.problems) + sink.getvalue()[-2000:])
        return report_plugin.report or {"tests": []}, plugin

    def _grade_loaded(self, handle, assignment, note, t0):
        spec = load_spec(assignment)
        replay = _replay_for(spec)
        if replay is not None and self.mode == "hidden":
            raise HwcheckError(KIT_HAS_NO_HIDDEN)
        report, plugin = self._run_tests(handle, spec, replay)
        load = handle.load_report()
        messages = ([note] if note else []) + load["messages"] + getattr(handle, "answer_notes", [])[:10]
        status = _status(handle, spec)
        written_for = None
        if status == "load_failed" and load["ok"]:  # it ran without an error, and defined nothing asked for
            # (not said of a file that could not be read at all, a notebook that is no JSON: its own message says
            # why, and "it is empty or holds no code" after it contradicted it, a CI probe, h45)
            if not (os.path.isfile(handle.path)
                    and any(m.get("kind") == "unreadable" for m in getattr(handle, "load_messages", []))):
                messages.append(nothing_defined(handle.path, handle.names, spec))
            load["ok"] = False
            other, share = infer_assignment(handle.names)  # the names of another assignment: the wrong -a?
            if other is not None and other != assignment and share >= 0.5:
                written_for = other
                messages.append(f"It defines {share:.0%} of the names of the assignment {other}: was it written "
                                f"for {other}?")
        scorecard = build_scorecard(
            report, spec,
            submission={"id": handle.id, "path": handle.path, "sha256": sha256_of(handle.path)},
            load={"ok": load["ok"], "messages": messages, "skipped": skipped_in_load(handle.load_messages),
                  "left_out": left_out_places(handle.load_messages),
                  **({"written_for": written_for} if written_for else {})},
            environment=environment(),
            grader={"version": __version__, "mode": self.mode, "spec_sha256": spec_sha256(assignment),
                    "seed": self.seed,
                    # what else decides a grade (`merge` and `--resume` compare them): --timeout, --device
                    "timeout": self.timeout, "devices": [d for d in ("cpu", "cuda") if d in self.devices],
                    "isolation": load["isolation"] + (["cuda-unavailable-in-walls"] if isinstance(self._cuda, str) else []),
                    **({"student_kit": True} if replay is not None else {})},
            duration_s=time.perf_counter() - t0, status=status,
            answers={q["id"]: getattr(handle, "answers", {}).get(q["id"])
                     for q in spec["questions"] if q["manual"]})
        counts = plugin.hidden_counts
        if replay is not None:  # the student kit: the full package's counts, recorded with the answers
            from checker.running.recorded import HIDDEN_COUNTS
            counts = replay.get(HIDDEN_COUNTS) or counts
        for q in scorecard["questions"]:
            if self.mode == "public" or replay is not None:
                # the hidden items pytest set aside (or the full package's, recorded): a name in the spec's
                # hidden_tests that is no test is no hidden test (`hwcheck validate` names it)
                q["hidden_tests"] = counts.get(q["id"], 0)
            else:
                q["hidden_tests"] = counts.get(q["id"], q.get("hidden_tests", 0))
        if self.keep_raw:
            scorecard["_raw_report"] = report
        return scorecard


if __name__ == "__main__":  # pragma: no cover - a quick manual check
    with Grader() as g:
        import json
        print(json.dumps(g.grade(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None), indent=1))
