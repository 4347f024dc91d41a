"""`hwcheck validate`'s kit check: does any code the student kit ships compute an answer? (the trusted side)

What it is for: `kit_code_problems(aid)`, `probe_kit`, `run_probe`, called by checker.platforms.validate's kit
check. It builds the student kit of the assignment into a temporary folder as `hwcheck kit` does (the
reference's public answers recorded), and meanwhile records the calls the public tests make of the
graded functions of the reference. Of those it keeps a few per function (distinct shapes), draws their
float arrays anew, and asks the reference for the answer (a float array, not constant, not equal to
one of its own inputs), with the spec's tolerance for it (`checker.judging.compare.tolerance` with the
question's tolerances; checker.platforms.kit makes these cases). It then runs the probe
(checker/platforms/kit_probe.py) as a script on the kit, in a process of its own (new PID, mount, network,
IPC and UTS namespaces where `unshare` can make them; an empty folder; a time limit: a hang or a crash is a
problem with a message), and names every shipped function that gave an answer, with its file and line. The
helpers' results the probe sends back it judges itself, running only the reference on them
(`checker.platforms.kit.returned_answer_hits`): a helper that returned inputs of a graded function and,
beside them, the reference's answer to them is named too.

What it is not: the probe itself (`checker.platforms.kit_probe`, the script that runs inside the kit and
imports nothing of hwcheck at module level), nor the kit's builder (`checker.platforms.kit`). Nothing
here runs in the probe's process.
"""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile

from checker.platforms.kit_probe import RETURNED

__all__ = ["kit_code_problems", "probe_kit", "run_probe", "KIT_PROBE_SECONDS"]

# the probe, run as a script on a built kit
PROBE_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kit_probe.py")

KIT_PROBE_SECONDS = 1200  # the whole probe of one kit: a hang becomes a problem with a message


def _isolation():
    """The command prefix that runs the probe in new PID, mount, network, IPC and UTS namespaces: as root
    (CAP_SYS_ADMIN), else in a user namespace; [] where neither is allowed (the probe's guards remain)."""
    if not sys.platform.startswith("linux") or not shutil.which("unshare"):
        return []
    base = ["unshare", "--pid", "--fork", "--mount-proc", "--net", "--ipc", "--uts", "--mount"]
    tries = ([base] if os.geteuid() == 0 else []) + [base[:1] + ["--user", "--map-root-user"] + base[1:]]
    for prefix in tries:
        try:
            if subprocess.run(prefix + ["true"], capture_output=True, timeout=30).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return []


def run_probe(kit, cases_path, out_path, *, timeout=KIT_PROBE_SECONDS, extra=()):
    """Run the probe (checker/platforms/kit_probe.py) as a script on a built kit, in a process of its own: (summary, hits); a crash or a
    timeout raises HwcheckError with what the probe said."""
    from checker.errors import HwcheckError
    with tempfile.TemporaryDirectory(prefix="hwcheck-probe-cwd-") as cwd:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HWCHECK_ASSIGNMENTS")}
        cmd = _isolation() + [sys.executable, "-I", PROBE_SCRIPT, str(kit), str(cases_path), str(out_path),
                              *map(str, extra)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd, env=env,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise HwcheckError(f"the kit probe (checker/platforms/kit_probe.py) did not finish in {timeout:g} s") from None
    lines = out.strip().splitlines()
    try:
        summary = json.loads(lines[-1])
    except (IndexError, ValueError):
        summary = None
    if proc.returncode != 0 or not isinstance(summary, dict):
        said = (err.strip() or out.strip()).splitlines()
        why = said[-1][-600:] if said else "no output"  # a traceback's last line: the exception
        raise HwcheckError(f"the kit probe (checker/platforms/kit_probe.py) failed (exit status {proc.returncode}): {why}")
    hits, summary["returned"] = [], []
    with open(out_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            with contextlib.suppress(ValueError):
                hit = json.loads(line)
                if isinstance(hit, dict) and {"function", "answer"} <= set(hit):
                    hits.append(hit)
    with contextlib.suppress(OSError), open(str(out_path) + RETURNED, encoding="utf-8", errors="replace") as f:
        for line in f:  # the helpers' results, for checker.platforms.kit.returned_answer_hits
            with contextlib.suppress(ValueError):
                entry = json.loads(line)
                if isinstance(entry, dict) and {"function", "value", "bufs"} <= set(entry):
                    summary["returned"].append(entry)
    return summary, hits


def probe_kit(aid, *, timeout=KIT_PROBE_SECONDS, more_cases=(), extra=()):
    """Build the student kit into a temporary folder, recording the reference's public answers as `hwcheck kit`
    does and the calls the public tests make of the graded functions, and probe it (checker/platforms/kit_probe.py).
    {"cases": [case names], "functions": n, "hits": [{"function", "file", "line", "answer"}], "timed_out": [...],
    "not_imported": [...]}; with no case (no graded function answers a float array) nothing is probed. A hit
    with "returned": a helper of the assignment, called with arguments of its own signature, returned inputs of
    a graded function with the reference's answer to them (checker.platforms.kit.returned_answer_hits judges
    the results the probe sends back, here, running only the reference).

    `aid` may be a list of assignments: their answers recorded into one kit and every one's cases probed in
    one run (the kit's code is the same; a probe's cost is mostly one fork per shipped function), with
    "cases_by_assignment" {aid: [case names]} beside "cases". `more_cases` (cases already packed, as
    `answer_cases` packs them) are probed beside the recorded ones, and `extra` (.py files) beside the kit's own
    code (the suite's planted controls, in the same run)."""
    import importlib

    from checker.platforms.kit import answer_cases, build_kit, capturing_calls, record_public, returned_answer_hits
    from checker.running.runner import Grader
    from checker.spec import load_spec
    aids = [aid] if isinstance(aid, str) else list(aid)
    specs = {a: load_spec(a) for a in aids}
    calls = {a: [] for a in aids}
    with tempfile.TemporaryDirectory(prefix="hwcheck-validate-kit-") as tmp:
        kit = os.path.join(tmp, "kit")
        with Grader(mode="public") as grader, contextlib.ExitStack() as stack:
            for a, spec in specs.items():
                names = [n for q in spec["questions"] if not q.get("manual") for n in q.get("names", [])]
                stack.enter_context(capturing_calls(importlib.import_module(spec["reference"]), names, calls[a]))
            build_kit(kit, lambda a: record_public(a, grader) if a in specs else {})
        by_aid = {a: answer_cases(specs[a], calls[a]) for a in aids}
        cases = [c for a in aids for c in by_aid[a]] + list(more_cases)
        named = {a: [c["name"] for c in by_aid[a]] for a in aids}
        if not cases:
            return {"cases": [], "cases_by_assignment": named, "functions": 0, "hits": [], "timed_out": [],
                    "not_imported": []}
        cases_path, out_path = os.path.join(tmp, "cases.json"), os.path.join(tmp, "hits.jsonl")
        with open(cases_path, "w", encoding="utf-8") as f:
            json.dump(cases, f)
        summary, hits = run_probe(kit, cases_path, out_path, timeout=timeout, extra=extra)
    hits += returned_answer_hits(specs, calls, summary.get("returned", []))
    return {"cases": [c["name"] for c in cases], "cases_by_assignment": named,
            "functions": summary.get("functions", 0), "hits": hits,
            "timed_out": summary.get("timed_out", []), "not_imported": summary.get("not_imported", [])}


def kit_code_problems(aid, *, timeout=KIT_PROBE_SECONDS):
    """`hwcheck validate`'s kit check: no code the student kit ships computes an answer of a graded
    function (see probe_kit); [problem], each naming the function, its file and its line."""
    found = probe_kit(aid, timeout=timeout)
    problems, advice = [], ("keep such code out of the kit (answer models go in the assignment's _answers.py, "
                            "which the kit leaves out)")
    for file, fn, answer, line, returned in sorted({(h.get("file") or "?", h["function"], h["answer"].split(" ")[0],
                                                     h.get("line") or 0, bool(h.get("returned"))) for h in found["hits"]}):
        if returned:
            problems.append(f"the kit ships code that computes an answer: {fn} ({file}, line {line}) returns inputs of "
                            f"{answer} with the reference's answer to them, and a public test uses it, so the kit "
                            f"keeps it; let the test take its expected value from `ref` (recorded for the kit), and "
                            f"{advice}")
        else:
            problems.append(f"the kit ships code that computes an answer: {fn} ({file}) returns the reference's "
                            f"answer of {answer} on fresh inputs (line {line}); {advice}")
    problems += [f"the kit's module {m} could not be imported to be probed for code that computes an answer"
                 for m in found["not_imported"]]
    return problems
