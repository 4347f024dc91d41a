"""`hwcheck validate`'s probe of a student kit: does any code the kit ships compute an answer?

What it is for, in two halves (this file is the probe, the second; the first is `checker.platforms.kit_check`):

The trusted side (`checker.platforms.kit_check`: `kit_code_problems(aid)`, `probe_kit`, `run_probe`; called by
checker.platforms.validate's kit check) builds the student kit of the assignment into a temporary folder as
`hwcheck kit` does (the reference's public answers recorded), and meanwhile records the calls the public tests make of the
graded functions of the reference. Of those it keeps a few per function (distinct shapes), draws their
float arrays anew, and asks the reference for the answer (a float array, not constant, not equal to
one of its own inputs), with the spec's tolerance for it (`checker.judging.compare.tolerance` with the
question's tolerances; checker.platforms.kit makes these cases). It then runs this file as a script on
the kit, in a process of its own (new PID, mount, network, IPC and UTS namespaces where `unshare` can
make them; an empty folder; a time limit: a hang or a crash is a problem with a message), and names
every shipped function that gave an answer, with its file and line. The helpers' results the probe sends
back (below) it judges itself, running only the reference on them (`checker.platforms.kit.returned_answer_hits`):
a helper that returned inputs of a graded function and, beside them, the reference's answer to them
(`_case(rng, T)` giving `((Q, K, V), answer)`, kept in the kit because a public test uses it) is named too.

The probe (`python -I kit_probe.py KIT CASES OUT [EXTRA.py ...]`, also run by tests/test_kit.py) imports
every .py file under KIT (the kit's own hwcheck; the full package and the reference solutions are
hidden from the import system), collects every function and method they define (module level, class
bodies, fixtures' and decorators' wrapped functions), and calls each on every case's inputs from CASES
(JSON: the wire encoding of the inputs, the reference's answer, and `rtol`, `atol`; without them,
rtol=1e-6, atol=1e-9). A function that needs more arguments than a case gives is called with every
combination, those of the first values first, of a generic set (None, -1, 0, 1, 2, 0.5, True, False)
and of values the case's shapes suggest (the causal mask of each input's T; each size k, 1/sqrt(k),
sqrt(k)). Every array in a result (nested in lists, tuples and dicts; a list of same-shape arrays is
stacked too) is compared with every answer, as `checker.judging.compare` does (|got - want| <= atol + rtol *
|want|); each function whose result equals one is written to OUT as a JSON line {"function", "file",
"line", "answer"}. Each module-level function of an assignment's modules (and of EXTRA files) is also called
with arguments of its own signature, where each parameter has one (a numpy Generator for rng, random_state,
gen; the default, and another small int for an int default; small ints for a name like T, n, d_k, seed;
OWN_CALLS calls at most): up to OWN_RESULTS results holding two float arrays or more go to OUT + ".returned"
as JSON lines {"function", "file", "line", "value", "bufs"} (checker.wire's encoding), for the trusted side
to judge. EXTRA files are probed as well (a test's planted control). The last line on stdout is a JSON
summary: {"functions", "timed_out", "not_imported"}. Each function runs in its own forked child
(PARALLEL at a time) with a time limit (and each case a share of it), its output sent nowhere and the
calls that remove files, end processes, start programs or fork refused (the kit is hwcheck's own code, called
with odd arguments: a `kill(pid, sig)` handed -1 must reach nothing). Its temp dir is its working folder,
which `run_probe` makes and removes: a probed call's temp files go there (Python's own first look for the
temp dir writes a file and removes it, which the children may not).

What it is not: a proof, nor a wall against hostile code; closures and lambdas inside functions are
reached only through the functions that return them, and only answers that are arrays of floats are
looked for (shape answers are the handout's own formulas; a graded class is not probed). It imports
nothing of hwcheck at module level: run as a script, the `checker` it uses (checker.wire) is the kit's.
Nor the trusted side that builds the kit and runs this (`checker.platforms.kit_check`).
"""

import gc
import importlib
import importlib.util
import inspect
import itertools
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time

__all__ = ["main", "RETURNED"]

CALLS_PER_CASE = 1000
SECONDS_PER_CASE = 2.5  # each case's share of a function's time, however slow its calls
SECONDS_PER_FUNCTION = 60
DEFAULT_TOLERANCE = (1e-6, 1e-9)  # (rtol, atol) of a case that gives none
OWN_CALLS = 12  # calls of a module-level function of an assignment with arguments its own signature suggests
OWN_RESULTS = 3  # of them, results holding two float arrays or more that are sent back to be judged
OWN_BYTES = 1 << 20
RETURNED = ".returned"  # OUT + this: the helpers' results, one JSON line each
RNG_NAMES = {"rng", "random_state", "gen", "generator", "random", "rs"}
INT_NAME = re.compile(r"[A-Za-z][A-Za-z]?\d?|[nd]_\w+|(num|len|max|min)_?\w*|\w+_(size|len|dim|count|heads|tokens|steps)"
                      r"|size|dim|width|height|depth|heads|steps|batch|length|count|seq|tokens")
PARALLEL = max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


# ---------------------------------------------------------------------------
# the probe: runs as a script inside the kit
# ---------------------------------------------------------------------------

def _hide_the_full_package(kit):
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f) and "editable" not in str(type(f))]
    sys.path[:] = [kit] + [p for p in sys.path if p and os.path.abspath(p) != os.getcwd()
                           and os.path.abspath(p) != os.path.dirname(os.path.abspath(__file__))]
    for name in [m for m in sys.modules if m == "checker" or m.startswith("checker.")]:
        del sys.modules[name]
    folder = os.path.join(kit, "assignments")
    for aid in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        try:
            found = importlib.util.find_spec(f"assignments.{aid}.reference")
        except ImportError:
            found = None
        if found is not None:
            raise SystemExit(f"the reference solutions are importable here ({found.origin})")


def _modules(kit):
    names = []
    for root, dirs, files in os.walk(kit):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        if root != kit and "__init__.py" not in files:
            continue
        for f in sorted(files):
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(root, f), kit)[:-3].replace(os.sep, ".")
                names.append(rel[: -len(".__init__")] if rel.endswith(".__init__") else rel)
    return names


def _unwrapped(obj, seen):
    """The plain functions behind obj (a function, a static/class method, a property, a fixture, a wrapper)."""
    out = []
    for attr in ("fget", "fset", "__func__", "__wrapped__", "_fixture_function", "hypothesis"):
        try:
            inner = getattr(obj, attr, None)
            if attr == "hypothesis":
                inner = getattr(inner, "inner_test", None)
        except Exception:  # noqa: BLE001  (an object whose attribute lookup raises)
            continue
        if inner is not None and inner is not obj:
            out += _unwrapped(inner, seen)
    get = getattr(obj, "_get_wrapped_function", None)
    if callable(get):
        try:
            out += _unwrapped(get(), seen)
        except Exception:  # noqa: BLE001
            pass
    if inspect.isfunction(obj) and id(obj) not in seen:
        # kept alive in `seen`: an object whose __getattr__ makes a function for any name (checker.platforms.kit's
        # Answers) hands out ones that are dropped at once, and a later function could reuse the id
        seen[id(obj)] = obj
        out.append(obj)
    return out


def _functions(module, seen):
    found = []
    for value in list(vars(module).values()):
        if inspect.isclass(value):
            if value.__module__ == module.__name__:
                for member in list(vars(value).values()):
                    found += _unwrapped(member, seen)
            continue
        found += [fn for fn in _unwrapped(value, seen) if fn.__module__ == module.__name__]
    return found


def _shapes(value):
    if hasattr(value, "shape"):
        return [tuple(value.shape)]
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _shapes(v)]
    return []


def _pool(args):
    """Generic values, then what the case's shapes suggest."""
    pool = [None, -1, 0, 1, 2, 0.5, True, False]
    sizes = sorted({k for s in _shapes(args) for k in s if k > 1} | {a for a in args if type(a) is int and a > 1})
    torchy = any(type(a).__module__.startswith("torch") for a in args)
    for k in sorted({s[-2] for s in _shapes(args) if len(s) >= 2}):  # T of each (..., T, d) input
        if torchy:
            import torch
            pool.append(torch.ones(k, k, dtype=torch.bool).triu(1))
        else:
            import numpy as np
            pool.append(np.triu(np.ones((k, k), dtype=bool), 1))
    for k in sizes:
        pool += [k, 1 / math.sqrt(k), math.sqrt(k)]
    return pool


def _fills(pool, k):
    """Every k-tuple of the pool, those of its first values first."""
    if k == 0:
        yield ()
        return
    for top in range(len(pool)):
        for idx in itertools.product(range(top + 1), repeat=k):
            if max(idx) == top:
                yield tuple(pool[i] for i in idx)


def _arg_tuples(fn, cases):
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return
    params = list(sig.parameters.values())
    if any(p.kind == p.KEYWORD_ONLY and p.default is p.empty for p in params):
        return
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = sum(p.default is p.empty for p in positional)
    var = any(p.kind == p.VAR_POSITIONAL for p in params)
    for case in cases:
        args = case["args"]
        if len(args) > len(positional) and not var:
            continue
        until = time.monotonic() + SECONDS_PER_CASE
        for fill in itertools.islice(_fills(_pool(args), max(0, required - len(args))), CALLS_PER_CASE):
            if time.monotonic() > until:
                break
            yield args + list(fill)


class _Rng:
    """A parameter's choice: a fresh numpy Generator of this seed at each call."""

    def __init__(self, seed):
        self.seed = seed


def _own_choices(p):
    """What a helper's parameter may be given when it makes its own inputs (None: nothing is known for it):
    a numpy Generator for an rng, the default (and one other small int for an int default), small ints for
    a name that looks like a size."""
    if p.name.lower() in RNG_NAMES:
        return [_Rng(1), _Rng(2)]
    if p.name in ("device", "dtype"):
        return ["cpu" if p.name == "device" else "float64"]
    if p.default is not p.empty:
        others = [k for k in (3, 4) if k != p.default][:1] if type(p.default) is int else []
        return [p.default] + others
    if p.name == "seed" or p.name.endswith("_seed"):
        return [0, 1]
    return [4, 3, 5] if INT_NAME.fullmatch(p.name) else None


def _own_arg_tuples(fn):
    """At most OWN_CALLS argument lists from fn's own signature (see _own_choices), the first choices first."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return
    if any(p.kind == p.KEYWORD_ONLY and p.default is p.empty for p in params):
        return
    choices = [_own_choices(p) for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(choices) > 8 or any(c is None for c in choices):
        return
    import numpy as np
    combos = sorted(itertools.product(*[range(len(c)) for c in choices]), key=lambda idx: (max(idx, default=0), idx))
    for idx in combos[:OWN_CALLS]:
        yield [np.random.default_rng(c[i].seed) if isinstance(c[i], _Rng) else c[i] for c, i in zip(choices, idx)]


def _plain(value, depth=0):
    """What of a result can travel back (checker.wire): arrays, tensors, numbers, str, nested; else None."""
    import numpy as np
    mod = type(value).__module__
    if depth > 6:
        return None
    if value is None or type(value) in (bool, int, float, str) or isinstance(value, (np.ndarray, np.generic)):
        return value
    if mod.startswith("torch") and hasattr(value, "detach"):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v, depth + 1) for v in value) if type(value) in (list, tuple) \
            else tuple(_plain(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v, depth + 1) for k, v in value.items() if type(k) in (str, int)}
    return None


def _arrays(value, depth=0):
    """The float arrays in a result, as float64 numpy arrays."""
    import numpy as np
    if depth > 4:
        return []
    mod = type(value).__module__
    if mod.startswith("torch") and hasattr(value, "detach"):
        try:
            value = value.detach().to("cpu").double().numpy()
        except Exception:  # noqa: BLE001
            return []
    if isinstance(value, np.ndarray):
        return [value.astype(np.float64)] if value.dtype.kind == "f" else []
    out = []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)) and len(value) <= 2000:
        for v in value:
            out += _arrays(v, depth + 1)
        shapes = {a.shape for a in out}
        if len(out) > 1 and len(shapes) == 1 and len(out) == len(value):
            out.append(np.stack(out))
    return out


def _leaks(result, answers):
    import numpy as np
    hits = []
    for got in _arrays(result):
        for name, want, (rtol, atol) in answers:
            if got.shape == want.shape and bool(np.all(np.abs(got - want) <= atol + rtol * np.abs(want))):
                hits.append(name)
    return hits


def _refused(what):
    def refuse(*args, **kwargs):
        raise PermissionError(f"the kit probe lets no probed function {what}")
    return refuse


def _guard():
    """In a probe's child: the calls that remove files, end processes or start programs or processes raise
    instead (a forked process would go on probing beside its parent: hwcheck's own fork_init, called with odd
    arguments, made the probe of a kit take a minute longer, each call running until the time limit)."""
    for name in ("kill", "killpg", "remove", "unlink", "rmdir", "removedirs", "rename", "renames", "replace",
                 "truncate", "system", "execv", "execve", "execvp", "execvpe", "execl", "execle", "execlp",
                 "execlpe", "posix_spawn", "posix_spawnp", "setsid", "setpgid", "setpgrp", "fork", "forkpty"):
        if hasattr(os, name):
            setattr(os, name, _refused(f"call os.{name}"))
    signal.pthread_kill = _refused("send signals")
    shutil.rmtree = _refused("remove folders")
    shutil.move = _refused("move files")
    subprocess.Popen.__init__ = _refused("start programs")


def _where(fn, kit):
    try:
        path = inspect.getsourcefile(fn) or ""
    except TypeError:
        path = ""
    if path and os.path.abspath(path).startswith(os.path.abspath(kit) + os.sep):
        path = os.path.relpath(path, kit)
    return path


def _line(fn):
    return getattr(getattr(fn, "__code__", None), "co_firstlineno", None)


def _probe(fn, cases, answers, out_fd, kit):
    where = f"{fn.__module__}.{fn.__qualname__}"
    for args in _arg_tuples(fn, cases):
        try:
            result = fn(*args)
        except BaseException:  # noqa: BLE001  (odd arguments: most calls fail, which is fine)
            continue
        for hit in _leaks(result, answers):
            os.write(out_fd, (json.dumps({"function": where, "file": _where(fn, kit), "line": _line(fn),
                                          "answer": hit}) + "\n").encode())
            return


def _probe_own(fn, own_fd, kit):
    """Call a helper with arguments of its own signature (_own_arg_tuples); write each result holding two
    float arrays or more (inputs, an answer?) to own_fd, for the trusted side to judge with the reference."""
    import base64
    sent, until = 0, time.monotonic() + SECONDS_PER_CASE
    for args in _own_arg_tuples(fn):
        if sent >= OWN_RESULTS or time.monotonic() > until:
            return
        try:
            result = fn(*args)
            if len(_arrays(result)) < 2:
                continue
            obj, bufs = _WIRE[0].encode(_plain(result), max_bytes=OWN_BYTES)
        except BaseException:  # noqa: BLE001
            continue
        os.write(own_fd, (json.dumps({"function": f"{fn.__module__}.{fn.__qualname__}", "file": _where(fn, kit),
                                      "line": _line(fn), "value": obj,
                                      "bufs": [base64.b64encode(bytes(b)).decode() for b in bufs]}) + "\n").encode())
        sent += 1


_WIRE = []  # the kit's checker.wire, once main has imported it


def _run_child(fn, cases, answers, fds, kit, own):
    """In the forked child: nothing to see, high descriptors for the hits and results, the guards, a time limit."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    high = (soft if 0 < soft <= 4096 else 4096) - 1
    os.dup2(fds[0], high)
    os.dup2(fds[1], high - 1)
    os.closerange(3, high - 1)
    _guard()
    signal.alarm(SECONDS_PER_FUNCTION)
    _probe(fn, cases, answers, high, kit)
    if id(fn) in own:
        _probe_own(fn, high - 1, kit)


def _run_all(functions, cases, answers, fds, kit, own=frozenset()):
    """Probe each function in a forked child, PARALLEL at a time; [the functions that ran out of time]
    (a child that outlives its limit, having caught SIGALRM, is killed)."""
    timed_out, running, todo, pause = [], {}, list(functions), 0.0005
    while todo or running:
        while todo and len(running) < PARALLEL:
            fn = todo.pop(0)
            pid = os.fork()
            if pid == 0:
                try:
                    _run_child(fn, cases, answers, fds, kit, own)
                finally:
                    os._exit(0)
            running[pid] = (fn, time.monotonic())
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            for child, (fn, started) in list(running.items()):
                if time.monotonic() - started > SECONDS_PER_FUNCTION + 5:
                    os.kill(child, signal.SIGKILL)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
            continue
        pause = 0.0005
        if pid not in running:  # an orphan reparented to us (we are the PID namespace's init)
            continue
        fn, _ = running.pop(pid)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGALRM, signal.SIGKILL):
            timed_out.append(f"{fn.__module__}.{fn.__qualname__}")
    return timed_out


def main():
    kit, cases_path, out_path, *extra = sys.argv[1:]
    kit = os.path.abspath(kit)
    tempfile.tempdir = os.getcwd()  # run_probe's folder (see the module's docstring), before any child asks
    _hide_the_full_package(kit)
    import numpy as np  # noqa: F401  (before any probe: the children share it)
    import torch  # noqa: F401
    from checker import wire
    import base64
    if not wire.__file__.startswith(kit + os.sep):
        raise SystemExit(f"the probe imported {wire.__file__}, not the kit's checker")
    with open(cases_path, encoding="utf-8") as f:
        raw = json.load(f)

    def unpack(entry):
        return wire.decode_worker(entry["value"], [base64.b64decode(b) for b in entry["bufs"]])

    cases = [{"name": c["name"], "args": list(unpack(c["args"]))} for c in raw]
    answers = [(c["name"], np.asarray(unpack(c["answer"]), dtype=np.float64),
                (float(c.get("rtol", DEFAULT_TOLERANCE[0])), float(c.get("atol", DEFAULT_TOLERANCE[1]))))
               for c in raw]
    sys.argv = ["hwcheck", "--help"]
    seen, functions, failed, own = {}, [], [], set()
    _WIRE.append(wire)

    def collect(module):
        found = _functions(module, seen)
        if module.__name__.startswith(("assignments.", "_probe_extra_")):  # an assignment's module-level helpers
            own.update(id(fn) for fn in found if "." not in fn.__qualname__)
        return found
    for name in _modules(kit):
        try:
            module = importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001  (a module that cannot be imported here is reported)
            failed.append(f"{name}: {type(e).__name__}: {str(e)[:200]}")
            continue
        functions += collect(module)
    for i, path in enumerate(extra):
        spec = importlib.util.spec_from_file_location(f"_probe_extra_{i}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        functions += collect(module)
    import gc
    gc.collect()
    gc.freeze()
    gc.collect()
    gc.freeze()  # a child's garbage collection would otherwise copy the whole heap it shares (~160 ms each)
    fds = [os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600) for p in (out_path, out_path + RETURNED)]
    timed_out = _run_all(functions, cases, answers, fds, kit, own)
    for fd in fds:
        os.close(fd)
    print(json.dumps({"functions": len(functions), "timed_out": timed_out, "not_imported": failed}), flush=True)


if __name__ == "__main__":
    main()
