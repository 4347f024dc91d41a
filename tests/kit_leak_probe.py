"""Run inside a built student kit by tests/test_kit.py: does any code the kit ships compute an answer?

What it is for: `python kit_leak_probe.py KIT CASES OUT [EXTRA.py ...]` imports every .py file under KIT
(the kit's own hwcheck; the full package and the reference solutions are hidden from the import system),
collects every function and method they define (module level, class bodies, fixtures' and decorators'
wrapped functions), and calls each on every case's inputs from CASES (JSON: the wire encoding of
fresh inputs of the reference's functions and the reference's answers to them). A function that needs
more arguments than a case gives is called with every combination, those of the first values first,
of a generic set (None, -1, 0, 1, 2, 0.5, True, False) and of values the case's shapes suggest (the
causal mask of each input's T; each size k, 1/sqrt(k), sqrt(k)). Every array in a result (nested in
lists, tuples and dicts; a list of same-shape arrays is stacked too) is compared with every answer; each
function whose result equals one is written to OUT as a JSON line. EXTRA files are probed as well (the test's planted control).

Each function runs in its own forked child with a time limit (and each case a share of it); the test
runs this script in new PID, mount, network, IPC and UTS namespaces, in an empty folder, so a function
that kills, mounts or connects reaches nothing outside.

What it is not: a proof; closures and lambdas inside functions are reached only through the functions
that return them, and only answers that are arrays of floats are looked for (shape answers are the
handout's own formulas).
"""
import importlib
import importlib.util
import inspect
import itertools
import json
import math
import os
import signal
import sys
import time

CALLS_PER_CASE = 1000
SECONDS_PER_CASE = 2.5  # each case's share of a function's time, however slow its calls
SECONDS_PER_FUNCTION = 60


def _hide_the_full_package(kit):
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f) and "editable" not in str(type(f))]
    sys.path[:] = [kit] + [p for p in sys.path if p and os.path.abspath(p) != os.getcwd()]
    if importlib.util.find_spec("reference") is not None:
        raise SystemExit("the reference solutions are importable here")


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
        except Exception:
            pass
    if inspect.isfunction(obj) and id(obj) not in seen:
        seen.add(id(obj))
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


def _arrays(value, depth=0):
    """The float arrays in a result, as float64 numpy arrays."""
    import numpy as np
    if depth > 4:
        return []
    mod = type(value).__module__
    if mod.startswith("torch") and hasattr(value, "detach"):
        try:
            value = value.detach().to("cpu").double().numpy()
        except Exception:
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
        for name, want in answers:
            if got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-9):
                hits.append(name)
    return hits


def _probe(fn, cases, answers, out_fd):
    where = f"{fn.__module__}.{fn.__qualname__}"
    for args in _arg_tuples(fn, cases):
        try:
            result = fn(*args)
        except BaseException:
            continue
        for hit in _leaks(result, answers):
            os.write(out_fd, (json.dumps({"function": where, "answer": hit}) + "\n").encode())
            return


def main():
    kit, cases_path, out_path, *extra = sys.argv[1:]
    _hide_the_full_package(kit)
    import numpy as np  # noqa: F401  (before any probe: the children share it)
    import torch  # noqa: F401
    from checker import wire
    import base64
    with open(cases_path, encoding="utf-8") as f:
        raw = json.load(f)

    def unpack(entry):
        return wire.decode_worker(entry["value"], [base64.b64decode(b) for b in entry["bufs"]])

    cases = [{"name": c["name"], "args": list(unpack(c["args"]))} for c in raw]
    answers = [(c["name"], np.asarray(unpack(c["answer"]), dtype=np.float64)) for c in raw]
    sys.argv = ["hwcheck", "--help"]
    seen, functions, failed = set(), [], []
    for name in _modules(kit):
        try:
            module = importlib.import_module(name)
        except BaseException as e:  # noqa: BLE001  (a module that cannot be imported here is reported)
            failed.append(f"{name}: {type(e).__name__}")
            continue
        functions += _functions(module, seen)
    for i, path in enumerate(extra):
        spec = importlib.util.spec_from_file_location(f"_probe_extra_{i}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        functions += _functions(module, seen)
    devnull = os.open(os.devnull, os.O_RDWR)
    out_fd = os.open(out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o600)
    timed_out = []
    for fn in functions:
        pid = os.fork()
        if pid == 0:
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            signal.alarm(SECONDS_PER_FUNCTION)
            try:
                _probe(fn, cases, answers, out_fd)
            finally:
                os._exit(0)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
            timed_out.append(f"{fn.__module__}.{fn.__qualname__}")
    os.close(out_fd)
    print(json.dumps({"functions": len(functions), "timed_out": timed_out, "not_imported": failed}))


if __name__ == "__main__":
    main()
