"""Small, fixed procedures the trusted side may ask a worker to run on student code.

What it is for: module tests need more than one function call (build the
student's module, run forward on several inputs, backprop, move it to a
device). Each probe here does one such step on the student's namespace and
returns plain data only: arrays, shapes, names, flags.

What it is not: a judge. A probe never decides pass or fail and never sees a
reference answer; it runs in the untrusted worker and a submission could
tamper with it, so the trusted side treats what it returns as the student's
own output and checks it there (it sends, for instance, a batch and its
permutation as two unrelated inputs).

What a probe reports of a module's parameters and buffers (their count, names, shapes, devices and
gradients) is read from nn.Module's own registries (`registered`), never from methods the student's class
can override: a `parameters()` that yields made-up tensors once earned the parameter-count points.
"""

import inspect
import math
import re
import sys

__all__ = ["Probes", "ProbeError"]

# libraries whose Python functions `torch_calls` names too (torch's own calls it sees through a mode)
BY_HAND_LIBRARIES = ("scipy", "sklearn", "jax", "tensorflow", "keras")



def _is_tensor(a):
    """A torch tensor (torch is not imported for it: the numpy assignment's workers never load it)."""
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(a, torch.Tensor)


def _unclone(m, seed):
    """Give each parameter that starts as an exact copy of another (a module built from copies of one layer:
    The Annotated Transformer's `clones(nn.Linear(d, d), 4)`, nn.TransformerEncoder's deep-copied layers) its
    own values: the same values in another order, so their spread and scale are kept. Training would make the
    copies differ; at their start, keys made by a copy of the query layer look like keys made by the query
    layer itself (the tests read symmetric scores as that mistake). Parameters tied on purpose are one tensor
    (`registered` gives it once, as m.parameters() does); a constant one (a norm's ones) is the same in any order."""
    import torch
    first = {}
    g = torch.Generator().manual_seed(int(seed) & 0x7FFFFFFF)
    T = torch._C.TensorBase  # its own methods: a Parameter subclass's overrides are not asked
    with torch._C.DisableTorchFunction():
        for _name, p in registered(m):
            if not (T.numel(p) > 1 and T.is_floating_point(p)):
                continue
            data = T.detach(p)
            key = (tuple(data.shape), data.dtype, data.cpu().float().numpy().tobytes())
            if key not in first:
                first[key] = p
                continue
            order = torch.randperm(data.numel(), generator=g).to(data.device)
            T.copy_(p, data.flatten()[order].view_as(data))


def registered(m, registry="_parameters"):
    """[(qualified name, tensor)] of module `m`'s parameters (registry "_parameters") or buffers ("_buffers"), as
    torch's own `Module.named_parameters()` / `named_buffers()` list them (the modules in the order of
    `named_modules()`, each module and each tensor once, None entries left out), read from the registries
    themselves: each module's instance dict through nn.Module's own `__dict__` descriptor, and the registry
    through `dict`'s own methods. No method of the student's classes is called: `parameters()`,
    `named_parameters()`, `modules()`, `named_modules()`, `__getattribute__`, `__getattr__` or a registry that
    is a dict subclass may say what they like; what torch itself registered is what is counted. Without
    recursion (a chain of modules as deep as memory allows)."""
    torch = _torch()
    instance_dict = torch.nn.Module.__dict__["__dict__"].__get__
    out, seen, modules = [], set(), set()
    stack = [("", m)]
    while stack:
        prefix, mod = stack.pop()
        if id(mod) in modules:
            continue
        modules.add(id(mod))
        try:
            state = instance_dict(mod)
        except TypeError:  # not an nn.Module at all (a `_modules` entry put there by hand)
            continue
        values, children = state.get(registry), state.get("_modules")
        for name, v in (dict.items(values) if isinstance(values, dict) else ()):
            if v is None or id(v) in seen or not _is_tensor_object(v):
                continue
            seen.add(id(v))
            out.append((f"{prefix}.{name}" if prefix else f"{name}", v))
        below = [(f"{prefix}.{name}" if prefix else f"{name}", c)
                 for name, c in (dict.items(children) if isinstance(children, dict) else ()) if c is not None]
        stack.extend(reversed(below))
    return out


def _is_tensor_object(v):
    """Whether `v` is really a tensor (its type's layout is torch's, whatever its `__class__` says)."""
    torch = _torch()
    return torch._C.TensorBase in type(v).__mro__


def _real(t, what):
    """Tensor `t`'s attribute `what` (shape, dtype, device, grad, requires_grad) as torch's own tensor holds it,
    past a subclass's property or `__torch_function__` (a Parameter subclass may claim any shape or device)."""
    torch = _torch()
    with torch._C.DisableTorchFunction():
        return getattr(torch._C.TensorBase, what).__get__(t)


def count_parameters(m):
    """The number of parameter values `m` holds, as torch counts them (each registered tensor once)."""
    torch = _torch()
    with torch._C.DisableTorchFunction():
        return sum(int(torch._C.TensorBase.numel(p)) for _n, p in registered(m))


class ProbeError(Exception):
    """A probe could not run for a reason that is not the student's exception."""


def _torch():
    import torch
    return torch


def _dtype(name):
    torch = _torch()
    return getattr(torch, name)


class Probes:
    def __init__(self, ns):
        self.ns = ns
        self.modules = {}

    def lookup(self, name):
        if name not in self.ns:
            raise ProbeError(f"missing:{name}")
        return self.ns[name]

    def function(self, name):
        """`lookup` for a name the grader will call: a value that is not callable is told as such, with
        where the name got it (`context_vector = context_vector(...)` in a notebook)."""
        target = self.lookup(name)
        if callable(target):
            return target
        loader = getattr(self, "loader", None)
        place = loader.origins.get(name) if loader is not None else None
        kind = type(target).__name__
        module = type(target).__module__
        kind = kind if module in ("builtins", None) else f"{module.split('.')[0]}.{kind}"
        text = (f"`{name}` holds a {kind}, not a function, once your code has run"
                + (f": {place} gives the name that value" if place else "")
                + f". A line such as `{name} = {name}(...)` stores the result under the function's name and "
                  "replaces the function; store results under another name")
        raise ProbeError(text)

    def top_level_ints(self):
        """The submission's top-level int variables ({name: value}, at most 200): the trusted side names
        them when an error shows one of their values where a constructor argument belonged."""
        out = {}
        for name, value in list(self.ns.items()):
            if type(value) is int and not name.startswith("_") and abs(value) < 2**31:
                out[str(name)] = value
                if len(out) >= 200:
                    break
        return out

    def parameters(self, name):
        """The names of the parameters of `name` (a class: of its __init__, without self), at most 50;
        None when Python cannot say (a builtin, *args only)."""
        import inspect
        try:
            sig = inspect.signature(self.lookup(name))
        except (TypeError, ValueError):
            return None
        return [str(p.name)[:100] for p in sig.parameters.values()][:50]

    # -- plain calls
    def call(self, name, args, kwargs):
        return self.function(name)(*args, **(kwargs or {}))

    def call_changes(self, name, args, kwargs):
        """Call `name`; return its value and its array arguments as they are after the call (`args`: the
        array or torch tensor, or None for an argument that is neither). It decides nothing: the trusted side compares
        them with the copies it kept of what it sent (tests of `scores /= ...` on the caller's array).
        Whatever runs here can be rewritten by the student, so this report is forgeable; but forging it
        means handing back arguments equal to what was sent, which is what the caller sees of a function
        that leaves its arguments unchanged (see SubmissionHandle.call_changes)."""
        import numpy as np
        value = self.function(name)(*args, **(kwargs or {}))
        return {"value": value, "args": [a if type(a) is np.ndarray or _is_tensor(a) else None for a in args]}

    def torch_calls(self, name, args, kwargs):
        """Call `name`; return its value and the names of the torch functions it called (outermost only),
        so the trusted side can name F.scaled_dot_product_attention in work the handout asks for by hand.
        A hint only: the code under test can see this probe (its frames, `gc`) and call the library where
        the trace does not look (another thread), so the trusted side may fail a test on what this names
        but never passes one on its silence; it decides from the source (checker.running.by_hand)."""
        from torch.overrides import TorchFunctionMode

        class Recorder(TorchFunctionMode):
            def __init__(self):
                super().__init__()
                self.names = set()

            def __torch_function__(self, func, types, args=(), kwargs=None):
                self.names.add(str(getattr(func, "__name__", func))[:100])
                return func(*args, **(kwargs or {}))

        recorder = Recorder()

        def profile(frame, event, arg):  # Python functions of libraries that would do the work: "scipy:softmax"
            if event == "call":
                top = str(frame.f_globals.get("__name__", "")).split(".")[0]
                if top in BY_HAND_LIBRARIES:
                    recorder.names.add(f"{top}:{frame.f_code.co_name}"[:100])

        function = self.lookup(name)
        old = sys.getprofile()
        sys.setprofile(profile)
        try:
            with recorder:
                value = function(*args, **(kwargs or {}))
        finally:
            sys.setprofile(old)
        return {"value": value, "calls": sorted(recorder.names)[:500]}

    # -- modules
    def new(self, cls, args, kwargs, seed, device, dtype, example=None):
        """Build `cls(*args, **kwargs)` under `seed`, move it to `device`/`dtype`. `example`
        ({"shape": [...], "vocab": V or None}): an input of the tests' shape, used only to materialise
        lazy layers (nn.LazyLinear, ...) before anything counts, lists or moves the parameters."""
        torch = _torch()
        klass = self.lookup(cls)
        torch.manual_seed(seed)
        m = klass(*args, **(kwargs or {}))
        if not isinstance(m, torch.nn.Module):
            raise ProbeError(f"{cls}(...) did not build an nn.Module (got {type(m).__name__}); "
                             "the class must subclass torch.nn.Module")
        _materialise(m, cls, example)
        m = m.to(device=device, dtype=_dtype(dtype)) or m
        m.eval()
        if device != "meta":
            # A zero-initialised layer (legal: zero-init residual branches) would hide token mixing and
            # causality from the property tests; give such parameters small random values.
            with torch.no_grad(), torch._C.DisableTorchFunction():
                T = torch._C.TensorBase
                for _name, p in registered(m):
                    if T.numel(p) and T.is_floating_point(p) and not bool(T.any(p)):
                        T.normal_(p, 0.0, 0.02)
            with torch.no_grad():
                _unclone(m, seed)
        handle = len(self.modules) + 1
        self.modules[handle] = m
        return {"handle": handle, "params": self._params(m), "n_params": count_parameters(m)}

    def _params(self, m):
        return [{"name": n, "shape": list(_real(p, "shape")), "dtype": str(_real(p, "dtype")).replace("torch.", ""),
                 "device": str(_real(p, "device")), "requires_grad": bool(_real(p, "requires_grad"))}
                for n, p in registered(m)]

    def _module(self, handle):
        if handle not in self.modules:
            raise ProbeError("unknown module handle (the worker was restarted)")
        return self.modules[handle]

    def forward(self, handle, inputs, seed, train=False):
        """The module on each input, each under `seed` (so dropout draws the same masks for inputs of one shape),
        in eval mode, or in training mode (`train`) with its buffers (BatchNorm's running statistics) put
        back afterwards, so that no later ask sees what this one changed."""
        torch = _torch()
        m = self._module(handle)
        outs, filled = [], set()
        kept = _buffers_of(m) if train else None
        try:
            if train:
                m.train()
            with torch.no_grad():
                for x in inputs:
                    torch.manual_seed(seed)
                    y = _call(m, x, filled)
                    if y is None:
                        raise ProbeError("forward returned None: does forward end with `return ...`?")
                    outs.append(y)
        finally:
            if train:
                m.eval()
                _put_back(m, kept)
        # the dtype and device of a nanoGPT-style (logits, loss) are its logits'
        firsts = [_logits_of(y) for y in outs]
        return {"outputs": outs,
                "dtypes": [str(getattr(y, "dtype", type(y).__name__)).replace("torch.", "") for y in firsts],
                "devices": [str(getattr(y, "device", "cpu")) for y in firsts],
                "filled": sorted(filled)}

    def grads(self, handle, x, weight, seed):
        torch = _torch()
        m = self._module(handle)
        params = registered(m)
        with torch._C.DisableTorchFunction():  # every gradient cleared, whatever the class's zero_grad does
            for _n, p in params:
                torch._C.TensorBase.grad.__set__(p, None)
        torch.manual_seed(seed)
        with torch.enable_grad():
            y = _logits_of(_call(m, x))  # judged by its logits (one test says a container is not the contract)
            if not isinstance(y, torch.Tensor):
                raise ProbeError("forward did not return a tensor")
            loss = (y.to(weight.dtype) * weight).sum()
            loss.backward()
        out = []
        for n, p in params:
            g = _real(p, "grad")
            with torch._C.DisableTorchFunction():
                finite = bool(torch.isfinite(g).all().item()) if g is not None else None
            out.append({"name": n, "has_grad": g is not None, "finite": finite})
        return {"params": out, "output_requires_grad": bool(y.requires_grad)}

    def to(self, handle, device):
        m = self._module(handle)
        m2 = m.to(device) or m
        self.modules[handle] = m2
        return {"params": [{"name": n, "device": str(_real(p, "device"))} for n, p in registered(m2)],
                "buffers": [{"name": n, "device": str(_real(b, "device"))} for n, b in registered(m2, "_buffers")]}

    def attr_shape(self, handle, name):
        torch = _torch()
        m = self._module(handle)
        v = getattr(m, name, None)
        if isinstance(v, torch.Tensor):
            return {"shape": list(v.shape), "is_parameter": isinstance(v, torch.nn.Parameter)}
        return {"shape": None, "is_parameter": False}

    def swap_rows(self, handle, name, i, j):
        """Swap rows i and j (along the token axis, -2) of a tensor attribute, e.g. the positional embedding."""
        torch = _torch()
        v = getattr(self._module(handle), name, None)
        if not isinstance(v, torch.Tensor) or v.dim() < 2 or max(i, j) >= v.shape[-2]:
            raise ProbeError(f"`{name}` is not a tensor with at least {max(i, j) + 1} rows along its "
                             "second-to-last axis")
        with torch.no_grad():
            a, b = v[..., i, :].clone(), v[..., j, :].clone()
            v[..., i, :] = b
            v[..., j, :] = a
        return {"shape": list(v.shape)}

    def get_params(self, handle, names):
        """{name: a copy of the parameter} for the named parameters the module has."""
        torch = _torch()
        params = dict(registered(self._module(handle)))
        with torch._C.DisableTorchFunction():
            return {n: torch._C.TensorBase.detach(params[n]).clone() for n in names if isinstance(n, str) and n in params}

    def set_params(self, handle, values):
        """Overwrite named parameters in place with the given values (same shapes)."""
        torch = _torch()
        params = dict(registered(self._module(handle)))
        with torch.no_grad(), torch._C.DisableTorchFunction():
            for n, v in values.items():
                p = params.get(n)
                v = torch.as_tensor(v)
                if p is None or tuple(_real(p, "shape")) != tuple(v.shape):
                    raise ProbeError(f"the module has no parameter `{n}` of shape {tuple(v.shape)}")
                torch._C.TensorBase.copy_(p, v.to(device=_real(p, "device"), dtype=_real(p, "dtype")))
        return {"set": len(values)}

    def on_meta(self, handle, input_shape, input_dtype, vocab, lenient=False):
        """Move a built module to the meta device and run it there, outside any device context: the
        stand-in for a GPU on a machine without one. A tensor that forward makes without `device=`, or
        keeps in a plain attribute, stays on the CPU and meets the meta weights, as it would meet CUDA
        weights. Returns the output's shape and device; the student's exception goes to the trusted side.
        `lenient`: values read from meta tensors (`.item()`, `bool(...)`) are answered by stand-ins
        (see _values_stood_in), so that code that looks at values still meets its device bugs."""
        torch = _torch()
        m = self._module(handle)
        m.to("meta")
        x = (torch.zeros(input_shape, dtype=torch.int64, device="meta") if vocab
             else torch.empty(input_shape, dtype=_dtype(input_dtype), device="meta"))
        with torch.no_grad(), _embedding_devices_checked(), _values_stood_in(lenient):
            y = _call(m, x)
        return _meta_result(y, "forward")

    def call_on_meta(self, name, shapes, dtype, lenient=False):
        """Call `name` with one meta tensor of each shape in `shapes` (the function-level on_meta)."""
        torch = _torch()
        args = [torch.empty(shape, dtype=_dtype(dtype), device="meta") for shape in shapes]
        with _values_stood_in(lenient):
            y = self.function(name)(*args)
        return _meta_result(y, name)

    def meta_forward(self, cls, args, kwargs, input_shape, input_dtype, vocab):
        """Build and run on the meta device (shapes only); fall back to a small real run if data-dependent."""
        torch = _torch()
        klass = self.lookup(cls)
        try:
            with torch.device("meta"):
                m = klass(*args, **(kwargs or {}))
                if not vocab:  # in the input's dtype, as every module the tests build (`new`): a model made
                    m = m.to(dtype=_dtype(input_dtype)) or m  # under torch.set_default_dtype(float64) too
                m.eval()
                x = (torch.randint(0, vocab, input_shape) if vocab
                     else torch.empty(input_shape, dtype=_dtype(input_dtype)))
                y = m(x)
            if y is None:
                raise ProbeError("forward returned None: does forward end with `return ...`?")
            y = _logits_of(y)
            if not isinstance(y, torch.Tensor):
                raise ProbeError(f"forward returned {type(y).__name__}, not a tensor")
            return {"shape": list(y.shape), "fallback": None, "n_params": count_parameters(m)}
        except (NotImplementedError, RuntimeError) as e:
            if "meta" not in str(e).lower() and "data-dependent" not in str(e).lower():
                raise
            return {"shape": None, "fallback": f"{type(e).__name__}: {str(e)[:200]}"}


def _buffers_of(m):
    """Copies of the module's buffers, by name (torch's own tensor methods: a subclass's override runs nothing)."""
    torch = _torch()
    with torch._C.DisableTorchFunction():
        return {n: torch._C.TensorBase.clone(b) for n, b in registered(m, "_buffers")
                if isinstance(b, torch.Tensor)}


def _put_back(m, kept):
    """The buffers' values as _buffers_of copied them (a buffer replaced by another object is replaced back)."""
    torch = _torch()
    with torch.no_grad(), torch._C.DisableTorchFunction():
        for n, b in registered(m, "_buffers"):
            if n in kept and isinstance(b, torch.Tensor) and torch._C.TensorBase.size(b) == kept[n].shape:
                torch._C.TensorBase.copy_(b, kept[n])


def _is_lazy(m):
    from torch.nn.parameter import is_lazy
    return any(is_lazy(t) for _n, t in (*registered(m), *registered(m, "_buffers")))


def _materialise(m, cls, example):
    """Lazy layers (nn.LazyLinear, nn.LazyConv2d: the d2l.ai textbook's style) have no parameters until
    their first forward. As PyTorch says to, run one forward on a small CPU input of the tests' shape (in
    the default dtype, the one such layers are made in) before anything counts, lists, moves (`.to('meta')`
    would leave them empty) or differentiates them. The student's own exception, if their forward raises,
    goes to the trusted side as theirs; the RNG continues from the constructor's seed, so a rebuild is
    identical."""
    if not _is_lazy(m):
        return
    torch = _torch()
    if not isinstance(example, dict) or not isinstance(example.get("shape"), list):
        raise ProbeError(f"{cls} has lazy layers (parameters made on the first forward) and the grader gave "
                         "no example input to make them with")
    shape, vocab = [int(n) for n in example["shape"]], example.get("vocab")
    x = (torch.randint(0, int(vocab), shape) if vocab
         else torch.randn(shape, dtype=torch.get_default_dtype()))
    was_training = m.training
    m.eval()
    with torch.no_grad():
        _call(m, x)
    m.train(was_training)
    if _is_lazy(m):
        raise ProbeError(f"{cls} still has lazy layers after one forward on a {tuple(shape)} input: some "
                         "layer is never used in forward, so its parameters are never made")


_MISSING = re.compile(r"forward\(\) missing \d+ required positional arguments?: (.+)$")


def _call(m, x, filled=None):
    """m(x); a forward that requires more arguments than the input (`forward(self, idx, targets)`) is
    called again with None for them, or else a copy of the input (token ids serve as targets), so that one
    test can say so and the others still judge the model. The names filled in are added to `filled`."""
    try:
        return _all_positions(m, x, m(x), filled)
    except TypeError as e:
        found = _MISSING.search(str(e))
        if not found:
            raise
        names = re.findall(r"'(\w+)'", found.group(1))
        try:
            params = inspect.signature(m.forward).parameters
        except (TypeError, ValueError):
            raise e from None
        if not names or any(n not in params or params[n].default is not inspect.Parameter.empty
                            for n in names):
            raise
        y = None
        for stand_in in (None, x):  # None; else the input itself (targets of a language model: the ids' shape)
            try:
                y = m(x, **{n: (stand_in.clone() if stand_in is not None else None) for n in names})
                break
            except Exception:  # noqa: BLE001 - it needs other arguments: the first error says which
                continue
        else:
            raise e from None
        if filled is not None:
            filled.update(names)
        return y


def _logits_of(y):
    """The tensor a model's output stands for: nanoGPT's (logits, loss) and a {"logits": ...} dict give their
    logits (the trusted side charges the container in one test); anything else is itself."""
    torch = _torch()
    if isinstance(y, (tuple, list)) and y and isinstance(y[0], torch.Tensor):
        return y[0]
    if isinstance(y, dict) and isinstance(y.get("logits"), torch.Tensor):
        return y["logits"]
    return y


LAST_POSITION_ONLY = "@last_position_only"  # in `filled`: the logits came from forward(idx, targets=idx)


def _all_positions(m, x, y, filled):
    """nanoGPT's forward gives the logits of the last position only when it gets no targets (`x[:, [-1], :]`,
    an inference shortcut) and of every position with them. Such a model is called again with the ids as
    its targets, and its logits of every position are returned, with LAST_POSITION_ONLY in `filled`: one
    test charges the shortcut and the others judge the model."""
    torch = _torch()
    first = _logits_of(y)
    if not (isinstance(x, torch.Tensor) and x.dim() == 2 and not x.is_floating_point() and x.shape[1] > 1
            and isinstance(first, torch.Tensor) and first.dim() == 3 and tuple(first.shape[:2]) == (x.shape[0], 1)):
        return y
    try:
        params = list(inspect.signature(m.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return y
    optional = [p.name for p in params if p.default is None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if not optional:
        return y
    try:
        y2 = m(x, **{optional[0]: x.clone()})
    except Exception:  # noqa: BLE001 - then the last position's logits are what forward gives
        return y
    logits = _logits_of(y2)
    if not (isinstance(logits, torch.Tensor) and logits.dim() == 3 and tuple(logits.shape[:2]) == tuple(x.shape)):
        return y
    if filled is not None:
        filled.add(LAST_POSITION_ONLY)
    return logits


def _values_stood_in(on):
    """A torch function mode under which reading a value out of a meta tensor gives a stand-in instead of
    an error: `.item()` and `int()`/`float()` give 0, `bool()` gives False, `.tolist()` and `.numpy()`
    zeros, a copy to the CPU a CPU tensor of zeros. The meta
    device has no values; code that looks at them (a NaN assert, a max for a stable softmax) would
    otherwise stop there, before the tensors it makes could meet the meta weights. (`on`=False: no mode.)"""
    import contextlib

    if not on:
        return contextlib.nullcontext()
    torch = _torch()
    from torch.overrides import TorchFunctionMode

    T = torch.Tensor
    stand_ins = {T.item: lambda t: 0.0 if t.is_floating_point() else (False if t.dtype == torch.bool else 0),
                 T.__bool__: lambda t: False, T.__float__: lambda t: 0.0, T.__int__: lambda t: 0,
                 T.__index__: lambda t: 0, T.tolist: lambda t: torch.zeros(t.shape, dtype=t.dtype).tolist(),
                 T.numpy: lambda t: torch.zeros(t.shape, dtype=t.dtype).numpy()}
    # a copy out of a meta tensor (`.cpu()`, `.to("cpu")`, `buffer.copy_(x)`) gets a CPU tensor of zeros, so
    # that code which copies back to the input's device runs on, and code which stays on the CPU meets the
    # meta weights, as it would meet CUDA weights
    copies = {T.cpu, T.to, T.copy_}

    def zeros_like(t):
        return torch.zeros(t.shape, dtype=t.dtype)

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func in stand_ins and args and isinstance(args[0], T) and args[0].is_meta:
                return stand_ins[func](args[0])
            if func in copies:
                try:
                    return func(*args, **kwargs)
                except NotImplementedError as e:
                    if "copy out of meta" not in str(e).lower():
                        raise
                    if func is T.copy_ and len(args) > 1 and isinstance(args[1], T) and args[1].is_meta:
                        return func(args[0], zeros_like(args[1]), *args[2:], **kwargs)
                    if args and isinstance(args[0], T) and args[0].is_meta:
                        return func(zeros_like(args[0]), *args[1:], **kwargs)
                    raise
            return func(*args, **kwargs)

    return Mode()


def _embedding_devices_checked():
    """A torch function mode under which an embedding lookup with indices on another device than its
    weight raises, as it does on CUDA: the meta device alone accepts CPU indices (`self.pos(torch.arange(T))`
    made without `device=`), so without this that bug would pass the stand-in for a GPU."""
    torch = _torch()
    import torch.nn.functional as F
    from torch.overrides import TorchFunctionMode

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func is F.embedding or func is torch.embedding:
                idx, weight = (list(args) + [kwargs.get("input"), kwargs.get("weight")])[:2]
                if func is torch.embedding:
                    weight, idx = idx, weight  # torch.embedding(weight, indices)
                if (isinstance(idx, torch.Tensor) and isinstance(weight, torch.Tensor)
                        and idx.device != weight.device and idx.dim() > 0):
                    raise RuntimeError(f"Expected all tensors to be on the same device, but found the indices on "
                                       f"{idx.device} and the embedding weight on {weight.device} (an embedding "
                                       f"lookup needs its indices on the weight's device)")
            return func(*args, **kwargs)

    return Mode()


def _meta_result(y, what):
    """Shape, device and dtype of what a run on the meta device returned (the first tensor of a tuple)."""
    torch = _torch()
    if y is None:
        raise ProbeError(f"{what} returned None: does it end with `return ...`?")
    y = _logits_of(y)
    if not isinstance(y, torch.Tensor):
        raise ProbeError(f"{what} returned {type(y).__name__}, not a tensor")
    return {"shape": list(y.shape), "device": str(y.device), "dtype": str(y.dtype).replace("torch.", "")}


def numel(shape):
    return math.prod(shape)
