"""How a probe touches a student's module and its tensors, for checker.worker.probes.

What it is for: the mechanics the probes share, in the untrusted worker: torch imported lazily (the numpy
assignment's workers never load it), a module's parameters and buffers read from nn.Module's own registries
(`registered`, never the class's overridable methods), a module called with the arguments its forward
requires filled in (`_call`), its logits picked out of what it returned, a lazy module materialised, the
meta device's stand-ins, a gradient's directional derivatives as plain floats.

What it is not: a probe (checker.worker.probes holds the procedures the trusted side may ask for), or a judge:
like the probes, nothing here decides pass or fail.
"""

import inspect
import math
import re
import sys

__all__ = ["ProbeError", "registered", "count_parameters", "numel"]

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


def _directional(g, directions, finite):
    """[<g, u> for u in directions] as plain floats, in float64 on the CPU (torch's own methods); None for all
    where there is no gradient, it is not finite, or no direction was given."""
    torch = _torch()
    if g is None or not finite or not isinstance(directions, list):
        return None
    T = torch._C.TensorBase
    out = []
    with torch._C.DisableTorchFunction():
        flat = T.reshape(T.to(T.detach(g), device="cpu", dtype=torch.float64), (-1,))
        for u in directions[:8]:
            u = torch.as_tensor(u)
            if int(T.numel(u)) != int(T.numel(flat)):
                raise ProbeError(f"a direction of {int(T.numel(u))} values for a gradient of {int(T.numel(flat))}")
            out.append(float(T.item(T.sum(flat * T.reshape(T.to(u, device="cpu", dtype=torch.float64), (-1,))))))
    return out


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
