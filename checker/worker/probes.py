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

import sys

__all__ = ["Probes", "ProbeError"]

# libraries whose Python functions `torch_calls` names too (torch's own calls it sees through a mode)
BY_HAND_LIBRARIES = ("scipy", "sklearn", "jax", "tensorflow", "keras")
# torch's Python-level reference implementations, which no mode sees as one call (torch._refs.special.softmax,
# torch._decomp.decompositions._softmax): named "torch:<function>" when the code under test calls one directly
# (not when torch's own code does, as a meta tensor's kernels may)
BY_HAND_TORCH = ("torch._refs", "torch._decomp", "torch._prims", "torch._prims_common")

# the mechanics the probes share; count_parameters and registered are imported from here by tests
from checker.worker.module_calls import (ProbeError, _buffers_of, _call, _directional, _dtype,  # noqa: F401
                                         _embedding_devices_checked, _is_tensor, _logits_of, _materialise,
                                         _meta_result, _put_back, _real, _torch, _unclone, _values_stood_in,
                                         count_parameters, registered)


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
                module = str(frame.f_globals.get("__name__", ""))
                top = module.split(".")[0]
                if top in BY_HAND_LIBRARIES:
                    recorder.names.add(f"{top}:{frame.f_code.co_name}"[:100])
                elif top == "torch" and module.startswith(BY_HAND_TORCH):
                    caller = frame.f_back
                    if caller is None or str(caller.f_globals.get("__name__", "")).split(".")[0] != "torch":
                        recorder.names.add(f"torch:{frame.f_code.co_name}"[:100])

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

    def grads(self, handle=None, x=None, weight=None, seed=0, directions=None, values=False, function=None,
              args=None):
        """Forward on `x` under `seed`, then backward of loss = sum(output * weight); per parameter (torch's own
        registry, in its order): whether it got a gradient and whether that is finite.

        `directions` ({parameter name: [u_1, u_2, ...]}, arrays of the parameter's shape): each row also gets
        "directional": [<grad, u_k> for each u_k] (plain floats, computed in float64; None where the parameter
        has no gradient or it is not finite), autograd's directional derivatives of the loss; the trusted side
        compares them with finite differences of forwards it asks for itself. With `directions`, an output that
        does not require grad (a forward under torch.no_grad()) is answered (output_requires_grad False, no
        gradients) instead of raising backward's error. `values`: also "values", {name: a copy of the parameter}.

        `function` (a name) and `args` instead of a module: the same for a plain function called on `args`,
        each floating tensor a leaf that requires grad (given to the function as a copy of itself, so that an
        in-place change of an argument is the function's own business); rows per argument under "inputs", their
        directions in `directions` as a list per argument ([] or None for one left out). A probe: it decides nothing."""
        torch = _torch()
        if function is not None:
            return self._function_grads(function, args, weight, seed, directions)
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
            if tuple(_real(y, "shape")) != tuple(weight.shape):  # (a product would broadcast, or fail as the grader's)
                raise ProbeError(f"forward returned shape {tuple(_real(y, 'shape'))}, not {tuple(weight.shape)}")
            loss = (y.to(weight.dtype) * weight).sum()
            if directions is None or _real(loss, "requires_grad"):
                loss.backward()
        out = []
        for n, p in params:
            g = _real(p, "grad")
            with torch._C.DisableTorchFunction():
                finite = bool(torch.isfinite(g).all().item()) if g is not None else None
            row = {"name": n, "has_grad": g is not None, "finite": finite}
            if directions is not None:
                row["directional"] = _directional(g, directions.get(n) if isinstance(directions, dict) else None,
                                                  finite)
            out.append(row)
        result = {"params": out, "output_requires_grad": bool(y.requires_grad)}
        if values:
            with torch._C.DisableTorchFunction():
                result["values"] = {n: torch._C.TensorBase.detach(p).clone() for n, p in params}
        return result

    def _function_grads(self, name, args, weight, seed, directions):
        """grads of a plain function (see grads)."""
        torch = _torch()
        f = self.function(name)
        T = torch._C.TensorBase
        args = list(args) if isinstance(args, list) else []
        leaves = []
        with torch._C.DisableTorchFunction():
            for a in args:
                leaves.append(T.requires_grad_(T.clone(T.detach(a)), True)
                              if isinstance(a, torch.Tensor) and T.is_floating_point(a) else None)
        torch.manual_seed(seed)
        with torch.enable_grad():
            call_args = [T.clone(leaf) if leaf is not None else a for leaf, a in zip(leaves, args)]
            y = _logits_of(f(*call_args))
            if not isinstance(y, torch.Tensor):
                raise ProbeError(f"{name} did not return a tensor")
            if tuple(_real(y, "shape")) != tuple(weight.shape):
                raise ProbeError(f"{name} returned shape {tuple(_real(y, 'shape'))}, not {tuple(weight.shape)}")
            loss = (y.to(weight.dtype) * weight).sum()
            if _real(loss, "requires_grad"):
                loss.backward()
        rows = []
        for i, leaf in enumerate(leaves):
            if leaf is None:
                rows.append({"has_grad": None, "finite": None, "directional": None})
                continue
            g = _real(leaf, "grad")
            with torch._C.DisableTorchFunction():
                finite = bool(torch.isfinite(g).all().item()) if g is not None else None
            us = directions[i] if isinstance(directions, list) and i < len(directions) else None
            rows.append({"has_grad": g is not None, "finite": finite, "directional": _directional(g, us, finite)})
        return {"inputs": rows, "output_requires_grad": bool(_real(y, "requires_grad"))}

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
