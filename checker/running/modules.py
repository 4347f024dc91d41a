"""A student's nn.Module living in a worker, as the trusted side holds it (`sub.new(...)`), and what its
forward answered.

What it is for: `ModuleHandle` names the module by the handle the worker gave it and by the worker that
made it (a restarted worker no longer has it: a message, never another module's answer); its methods are
requests through the submission's handle (`checker.running.sandbox.SubmissionHandle.request`), bounded and
timed there. `ForwardResult` holds forward's outputs, their dtypes and devices.

What it is not: a place that runs student code or talks to a socket (`checker.running.sandbox` does), or a judge.
"""

from checker.errors import BadReturn, WorkerCrashed
from checker.running.meta_scan import refuse_meta_aware

__all__ = ["ModuleHandle", "ForwardResult", "GradientCheck", "function_gradient_check", "gradient_failure_text",
           "DETACHED_HINT"]

# The gradient check (ModuleHandle.gradient_check, function_gradient_check): each parameter (or input) moves by
# GRADIENT_STEP times its RMS (at least GRADIENT_FLOOR) along a random direction of RMS 1. In float64 a step of 1e-6
# leaves the finite difference within 1e-9 or so of the slope (the error of a central difference is the step squared,
# rounding is 1e-16 / 1e-6) and rarely carries a ReLU's kink across (a kink crossed shows as forward and backward
# differences that disagree, and is forgiven: GradientCheck); float32 takes a larger step.
GRADIENT_STEP = {"float64": 1e-6, "float32": 1e-3}
GRADIENT_FLOOR = 0.02
GRADIENT_WEIGHT = 30     # the most a part's step is scaled up (see ModuleHandle.gradient_check)
GRADIENT_RTOL = {"float64": 1e-4, "float32": 1e-2}  # a disagreement must exceed this fraction of the largest slope ...
GRADIENT_NOISE = 64      # ... plus this many times the output's rounding (machine epsilon x sum |output * W|) / step
GRADIENT_KINK = 1        # ... plus this many times |forward difference - backward difference| (a kink, rounding)
GRADIENT_COARSE = 1e4    # a staircase's second look: a step this many times larger (float64: 1e-2 of the RMS) ...
GRADIENT_COARSE_RTOL = 0.2  # ... where the slopes must agree within this fraction of the larger
GRADIENT_ASKS = 24       # moves of one round trip (two asks each; together.SEND_LIMIT counts 1 KiB an ask)
GRADIENT_BYTES = 60 * 1024  # together.SEND_LIMIT is 64 KiB


class ForwardResult:
    """The outputs of forward on several inputs, their dtypes and devices, and `filled`: the names of
    required forward arguments besides the input that the probe had to fill with None."""

    def __init__(self, outputs, dtypes, devices, filled=()):
        self.outputs, self.dtypes, self.devices = outputs, dtypes, devices
        self.filled = [n for n in filled if isinstance(n, str)][:10] if isinstance(filled, list) else []

    @classmethod
    def from_reply(cls, reply, wire_dtypes):
        """The worker's answer to `forward`, its dtypes read from the bytes that came back (`wire_dtypes`: the
        dtype names of the reply's arrays, in the order `wire.decode_trusted` met them), never from the dtype
        the worker says its outputs have: a tensor subclass can claim any dtype (its devices are still the
        worker's word: no bytes tell a device)."""
        outputs = reply["outputs"]
        return cls(outputs, output_dtypes(outputs, wire_dtypes), reply.get("devices", []), reply.get("filled", []))


def _arrays_in(value):
    """How many arrays `value` holds, counted as `wire.decode_trusted` meets them (a dict's values only)."""
    import numpy as np
    if type(value) is np.ndarray:
        return 1
    if type(value) in (list, tuple):
        return sum(_arrays_in(v) for v in value)
    if type(value) is dict:
        return sum(_arrays_in(v) for v in value.values())
    return 0


def output_dtypes(outputs, wire_dtypes):
    """The dtype of each forward output (of its logits, for nanoGPT's (logits, loss) and a {"logits": ...}
    dict, as the worker's probe picks them): the decoded array's own dtype, and bfloat16 where the wire
    sent that array as bfloat16 (it is decoded to float32, exactly); a value that is no array: its type."""
    import numpy as np
    aligned = sum(_arrays_in(o) for o in outputs) == len(wire_dtypes)
    names, at = [], 0
    for out in outputs:
        first, before = out, 0
        if type(out) in (list, tuple) and out and type(out[0]) is np.ndarray:
            first = out[0]
        elif type(out) is dict and type(out.get("logits")) is np.ndarray:
            first = out["logits"]
            keys = list(out)
            before = sum(_arrays_in(out[k]) for k in keys[:keys.index("logits")])
        if type(first) is np.ndarray:
            name = first.dtype.name
            if aligned and name == "float32" and wire_dtypes[at + before] == "bfloat16":
                name = "bfloat16"
        else:
            name = type(first).__name__
        names.append(name)
        at += _arrays_in(out)
    return names


def _np64(a):
    """A float64 numpy copy of a trusted-side tensor or array."""
    import numpy as np
    if hasattr(a, "detach"):
        a = a.detach().to("cpu").double().numpy()
    return np.asarray(a, dtype=np.float64)


def _loss(value, W, dtype, what):
    """(sum(output * W), sum |output * W|, the output's dtype) of an answer: its logits where it is a (logits, ...)
    tuple or a {"logits": ...} dict, as the worker's grads probe reads it."""
    import numpy as np
    if type(value) in (list, tuple) and value and type(value[0]) is np.ndarray:
        value = value[0]
    elif type(value) is dict and type(value.get("logits")) is np.ndarray:
        value = value["logits"]
    if type(value) is not np.ndarray or value.shape != W.shape:
        raise BadReturn(f"{what}: the output is not an array of shape {tuple(W.shape)} "
                        f"(got {getattr(value, 'shape', type(value).__name__)})")
    y = value.astype(np.float64)
    return float((y * W).sum()), float(np.abs(y * W).sum()), str(dtype or value.dtype)


class GradientCheck:
    """What the gradient check measured (ModuleHandle.gradient_check, function_gradient_check). `parts`: {name: {"scale",
    "autograd": [slope per direction from the gradient autograd gave], "has_grad"}}; `whole`: per direction, the slope
    along all parts at once, from autograd and from the forwards ({"autograd", "central", "forward", "backward",
    "noise"}); `no_graph`: the output does not require grad at all. It measures; `disagreeing()` says where autograd's
    slope and the forwards' differ by more than rounding, truncation and a kink can explain."""

    def __init__(self, what, dtype):
        self.what, self.dtype = what, dtype
        self.parts, self.whole, self.directions = {}, [], 0
        self.no_graph = False
        self.base = None
        self._per_part = None
        self._alone = None  # what _per_part measured, once asked
        self._coarse = None  # (names, eps) -> each named part's losses moved alone by eps (modules only)

    @staticmethod
    def slope(autograd, base, plus, minus, eps):
        """A direction's slope from autograd and from the losses at the base and moved both ways by eps."""
        import numpy as np
        l0, s0, dt = base
        noise = GRADIENT_NOISE * float(np.finfo(np.float64 if dt == "float64" else np.float32).eps) \
            * max(s0, plus[1], minus[1]) / eps
        return {"autograd": autograd, "central": (plus[0] - minus[0]) / (2 * eps),
                "forward": (plus[0] - l0) / eps, "backward": (l0 - minus[0]) / eps, "noise": noise}

    def set_whole(self, losses, eps):
        self.base, self.eps = losses[0], eps
        self.whole = [self.slope(sum(p["autograd"][k] for p in self.parts.values()), losses[0],
                                 losses[1 + 2 * k], losses[2 + 2 * k], eps) for k in range(self.directions)]

    def scale(self):
        return max([max(abs(s["autograd"]), abs(s["central"])) for s in self.whole] or [0.0])

    def off(self, s, scale=None):
        """How far autograd's slope is from the forwards' beyond what is allowed (> 0: they disagree)."""
        allowed = (GRADIENT_RTOL.get(self.dtype, GRADIENT_RTOL["float32"]) * (self.scale() if scale is None else scale) + s["noise"]
                   + GRADIENT_KINK * abs(s["forward"] - s["backward"]))
        return abs(s["central"] - s["autograd"]) - allowed

    def agrees(self):
        """True when autograd's slope agrees with the forwards' in every direction (the whole measured at once)."""
        return not self.no_graph and all(self.off(s) <= 0 for s in self.whole)

    def _measured(self):
        """Each part's losses moved alone (asked once: more round trips), or None where nothing can be asked."""
        if self._per_part is None:
            return None
        if self._alone is None:
            self._alone = self._per_part()
        return self._alone

    def flat_parts(self):
        """The parts whose forwards do not move at all (within rounding) along any direction while autograd gives
        them a clear slope, each measured alone: a forward that rounds to a low precision inside (a bfloat16 or
        float16 cast of the scores) is a staircase whose small steps change nothing, which no cut-off gradient
        gives (that shows the other way: the forwards move, autograd says less). The check cannot judge those."""
        measured = self._measured()
        if not measured:
            return []
        scale = self.scale()
        rtol = GRADIENT_RTOL.get(self.dtype, GRADIENT_RTOL["float32"])
        flat = []
        for n, p in self.parts.items():
            slopes = [self.slope(p["autograd"][k], self.base, *measured[n][k], self.eps)
                      for k in range(self.directions)]
            if (all(max(abs(s["central"]), abs(s["forward"]), abs(s["backward"])) <= s["noise"] for s in slopes)
                    and any(abs(s["autograd"]) > rtol * scale for s in slopes)):
                flat.append(n)
        return flat

    def staircases(self, names):
        """Of `names` (parts whose slopes disagree at the small step), those that step like a staircase there and
        agree with autograd at a step GRADIENT_COARSE times larger: in some direction the forwards do not move on
        one side at least (within rounding) while autograd gives a slope, and at the larger step every direction's
        slope is within GRADIENT_COARSE_RTOL of autograd's. A forward that rounds inside (scores cast to bfloat16)
        moves by jumps at small steps and smoothly at larger ones; a cut-off gradient disagrees at every step, and
        a smooth forward never stands still on one side while its slope is clear. Asked of the worker (one more
        round trip) only for those parts."""
        measured = self._measured()
        if not names or not measured or self._coarse is None:
            return []
        scale = self.scale()
        rtol = GRADIENT_RTOL.get(self.dtype, GRADIENT_RTOL["float32"])
        stepping = []
        for n in names:
            slopes = [self.slope(self.parts[n]["autograd"][k], self.base, *measured[n][k], self.eps)
                      for k in range(self.directions)]
            if any(min(abs(s["forward"]), abs(s["backward"])) <= s["noise"] and abs(s["autograd"]) > rtol * scale
                   for s in slopes):
                stepping.append(n)
        if not stepping:
            return []
        eps = self.eps * GRADIENT_COARSE
        coarse = self._coarse(stepping, eps)
        out = []
        for n in stepping:
            slopes = [self.slope(self.parts[n]["autograd"][k], self.base, *coarse[n][k], eps)
                      for k in range(self.directions)]
            if all(abs(s["central"] - s["autograd"]) <= GRADIENT_COARSE_RTOL * max(abs(s["central"]), abs(s["autograd"]))
                   + s["noise"] for s in slopes):
                out.append(n)
        return out

    def disagreeing(self):
        """[(name, autograd's slopes, the forwards' slopes)] of the parts whose slopes disagree, each part measured
        alone (asked of the worker here: more round trips), largest disagreement first."""
        measured = self._measured()
        if measured is None:
            return []
        scale, found = self.scale(), []
        for n, p in self.parts.items():
            slopes = [self.slope(p["autograd"][k], self.base, *measured[n][k], self.eps)
                      for k in range(self.directions)]
            worst = max(self.off(s, scale) for s in slopes)
            if worst > 0:
                found.append((worst, n, [s["autograd"] for s in slopes], [s["central"] for s in slopes]))
        return [(n, a, c) for _w, n, a, c in sorted(found, key=lambda f: -f[0])]


def function_gradient_check(sub, name, args, weight, names, seed=0, directions=2):
    """The gradient check of a plain function (`name`(*args)) with respect to its floating-tensor arguments, named
    `names` in messages: autograd's directional derivatives of sum(output * weight) (one round trip: Probes.grads with
    `function`), and central finite differences computed here from calls on arguments moved both ways along the same
    directions, each argument alone (one round trip, the calls asked together). Returns a GradientCheck whose parts
    are the arguments; its disagreeing() asks nothing more."""
    import numpy as np
    import torch
    from checker.judging.names import call_text
    sub.called.append(name)
    if sub.loaded and name not in sub.names and sub.load_ok:
        raise sub.missing(name)
    W = _np64(weight)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 5573])
    floating = [isinstance(a, torch.Tensor) and a.is_floating_point() for a in args]
    units = [[rng.standard_normal(tuple(a.shape)) for _ in range(directions)] if f else [] for a, f in zip(args, floating)]
    what = f"{call_text(name, args, {})} forward + backward (for the gradients)"
    r = sub.request("grads", {"handle": None, "function": name, "args": list(args), "weight": weight,
                              "seed": int(seed), "directions": units}, what=what, key=f"{name}(...)")
    if not isinstance(r, dict) or not isinstance(r.get("inputs"), list) or len(r["inputs"]) != len(args):
        raise BadReturn(f"{what}: malformed answer")
    dtype = str(args[0].dtype).replace("torch.", "") if args else "float64"
    check = GradientCheck(name, dtype)
    if r.get("output_requires_grad") is False:
        check.no_graph = True
    eps = GRADIENT_STEP.get(dtype, GRADIENT_STEP["float32"])
    moved_args, keys = [list(args)], []
    for i, (a, f) in enumerate(zip(args, floating)):
        if not f:
            continue
        row = r["inputs"][i] if isinstance(r["inputs"][i], dict) else {}
        a64 = _np64(a)
        scale = max(float(np.sqrt(np.mean(a64 ** 2))) if a64.size else 0.0, GRADIENT_FLOOR)
        d, has = row.get("directional"), bool(row.get("has_grad"))
        ad = ([scale * float(v) for v in d] if has and isinstance(d, list) and len(d) == directions
              and all(isinstance(v, (int, float)) for v in d) else [0.0] * directions)
        check.parts[names[i]] = {"scale": scale, "autograd": ad, "has_grad": has}
        for k in range(directions):
            for sign in (1.0, -1.0):
                moved = list(args)
                moved[i] = torch.from_numpy(a64 + sign * eps * scale * units[i][k]).to(a.dtype)
                moved_args.append(moved)
            keys.append(names[i])
    check.directions = directions
    with sub.together(chain=True) as t:
        asks = [t.call(name, *m) for m in moved_args]
    losses = [_loss(p.get(), W, dtype, call_text(name, args, {})) for p in asks]
    per = {n: [] for n in check.parts}
    for j, n in enumerate(keys):
        per[n].append(losses[1 + 2 * j: 3 + 2 * j])
    check.base, check.eps = losses[0], eps
    check.whole = [GradientCheck.slope(check.parts[n]["autograd"][k], losses[0], *per[n][k], eps)
                   for n in check.parts for k in range(directions)]
    check._per_part = lambda: per
    return check


class ModuleHandle:
    """A student's nn.Module instance living in the worker."""

    def __init__(self, sub, cls, info, device, dtype, generation=None):
        self.sub, self.cls = sub, cls
        self.handle = info.get("handle") if isinstance(info, dict) else None
        self.params = info.get("params", []) if isinstance(info, dict) else []
        self.n_params = info.get("n_params", 0) if isinstance(info, dict) else 0
        self.generation = sub.generation if generation is None else generation  # the worker that made it
        self.device, self.dtype = device, dtype

    def _req(self, op, args, what, expected_bytes=0):
        if self.sub.generation != self.generation:
            raise WorkerCrashed(f"{self.cls}: the worker was restarted after an earlier failure; "
                                "this module no longer exists")
        return self.sub.request(op, {"handle": self.handle, **args}, what=what, expected_bytes=expected_bytes)

    def _numel(self, names):
        """How many numbers the named parameters hold, as the worker described them when the module was made."""
        import math
        wanted, n = set(names), 0
        for p in self.params if isinstance(self.params, list) else []:
            shape = p.get("shape") if isinstance(p, dict) else None
            if isinstance(shape, list) and p.get("name") in wanted and all(type(d) is int and d >= 0 for d in shape):
                n += math.prod(shape)
        return min(n, 2**40)

    def forward(self, inputs, seed=0, train=False):
        """The module's outputs on `inputs` (each under `seed`), in eval mode, or in training mode (`train`: its
        buffers are put back afterwards)."""
        extra = {"train": True} if train else {}
        r = self._req("forward", {"inputs": list(inputs), "seed": int(seed), **extra},
                      f"{self.cls}.forward{' in training mode' if train else ''}")
        return self.sub.finish("forward", r, {"cls": self.cls})

    def grads(self, x, weight, seed=0, directions=None, values=False):
        """Forward on `x`, backward of sum(output * weight): per parameter whether it got a gradient (see
        Probes.grads); with `directions` ({name: [arrays]}) also autograd's directional derivatives, with
        `values` the parameters' values."""
        args = {"x": x, "weight": weight, "seed": int(seed)}
        if directions is not None:
            args["directions"] = directions
        if values:
            args["values"] = True
        return self._req("grads", args, f"{self.cls} forward + backward (for the gradients)",
                         expected_bytes=8 * self._numel([p.get("name") for p in self.params
                                                         if isinstance(p, dict)]) if values else 0)

    def gradient_check(self, x, weight, seed=0, directions=2):
        """Does autograd's gradient agree with how the output moves? Returns a GradientCheck (see there): autograd's
        directional derivatives of loss = sum(output * weight) along `directions` random directions per trainable
        parameter (one round trip: Probes.grads), and central finite differences of that loss computed here from
        forwards at the parameters moved both ways along the same directions, all parameters at once (one round
        trip, set_params and forward asked together; the parameters are put back). `GradientCheck.per_part()`
        then measures each parameter alone (more round trips: asked only where the whole disagrees)."""
        import numpy as np
        W = _np64(weight)
        trainable = [(p["name"], tuple(p["shape"]), str(p.get("dtype", "float32"))) for p in self.params
                     if isinstance(p, dict) and p.get("requires_grad") and isinstance(p.get("name"), str)
                     and str(p.get("dtype", "")).startswith(("float", "bfloat"))
                     and isinstance(p.get("shape"), list)]
        rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 5573])
        units = {n: [rng.standard_normal(shape) for _ in range(directions)] for n, shape, _ in trainable}
        r = self.grads(x, weight, seed=seed, directions=units, values=True)
        if not isinstance(r, dict):
            raise BadReturn(f"{self.cls} forward + backward: malformed answer")
        check = GradientCheck(self.cls, self.dtype)
        if r.get("output_requires_grad") is False:
            check.no_graph = True
            return check
        rows = {row.get("name"): row for row in r.get("params", []) if isinstance(row, dict)}
        values = r.get("values") if isinstance(r.get("values"), dict) else {}
        theta, kinds = {}, {}
        for n, shape, dt in trainable:
            v = values.get(n)
            row = rows.get(n, {})
            if type(v) is not np.ndarray or tuple(v.shape) != shape or row.get("finite") is False:
                continue  # not answered as described, or NaN/Inf gradients (the graph test charges those)
            theta[n], kinds[n] = v.astype(np.float64), ("float32" if dt.startswith(("bfloat", "float16")) else dt)
        parts = {}
        for n in theta:
            row = rows.get(n, {})
            scale = max(float(np.sqrt(np.mean(theta[n] ** 2))) if theta[n].size else 0.0, GRADIENT_FLOOR)
            d = row.get("directional")
            has = bool(row.get("has_grad"))
            ad = ([scale * float(a) for a in d] if has and isinstance(d, list) and len(d) == directions
                  and all(isinstance(a, (int, float)) for a in d) else [0.0] * directions)
            parts[n] = {"scale": scale, "units": units[n], "autograd": ad, "has_grad": has}
        check.parts, check.directions = parts, directions
        if not parts:
            return check
        # each part's step is weighted so that its share of the slope is about the largest part's (at most
        # GRADIENT_WEIGHT times its own size): the slope of a few attention weights is not lost among the embeddings'
        sizes = {n: float(np.sqrt(np.mean(np.square(p["autograd"])))) for n, p in parts.items()}
        top = max(sizes.values())
        for n, p in parts.items():
            w = min(GRADIENT_WEIGHT, top / sizes[n]) if sizes[n] > 0 else GRADIENT_WEIGHT
            p["scale"] *= w
            p["autograd"] = [w * a for a in p["autograd"]]
        eps = GRADIENT_STEP.get(self.dtype, GRADIENT_STEP["float32"])
        moves = [None]
        for k in range(directions):
            for sign in (1.0, -1.0):
                moves.append({n: theta[n] + sign * eps * p["scale"] * p["units"][k] for n, p in parts.items()})
        losses = self._losses(x, seed, W, moves, theta, kinds)
        check.set_whole(losses, eps)
        check._per_part = lambda: self._per_part(check, x, seed, W, theta, kinds, eps)
        check._coarse = lambda names, step: self._per_part(check, x, seed, W, theta, kinds, step, names)
        return check

    def _per_part(self, check, x, seed, W, theta, kinds, eps, names=None):
        moves, keys = [], []
        for n, p in check.parts.items():
            if names is not None and n not in names:
                continue
            for k in range(check.directions):
                for sign in (1.0, -1.0):
                    moves.append({n: theta[n] + sign * eps * p["scale"] * p["units"][k]})
                keys.append(n)
        losses = self._losses(x, seed, W, moves, theta, kinds)
        return {n: [losses[2 * i: 2 * i + 2] for i, key in enumerate(keys) if key == n] for n in check.parts
                if names is None or n in names}

    def _losses(self, x, seed, W, moves, theta, kinds):
        """[(loss, sum of |output * W|, output dtype)] of forward on `x` with each of `moves` ({name: values}; None:
        the parameters as they are) set in turn, asked together in round trips of at most GRADIENT_ASKS asks and
        GRADIENT_BYTES bytes; every parameter moved is put back at the end of each round trip."""
        import numpy as np
        import torch
        x_bytes = int(x.numel() * x.element_size()) if hasattr(x, "element_size") else 0
        back_bytes = sum(theta[n].size * np.dtype(kinds[n]).itemsize for n in theta) + 1024
        out, i, moved = [], 0, set()
        while i < len(moves):
            asks, size = [], back_bytes
            with self.sub.together(chain=True) as t:
                while i < len(moves) and len(asks) < GRADIENT_ASKS:
                    move = moves[i] or {}
                    vals = {n: theta[n] for n in moved - set(move)}
                    vals.update(move)
                    sent = {n: torch.from_numpy(np.ascontiguousarray(v, dtype=kinds[n])) for n, v in vals.items()}
                    cost = sum(v.nbytes for v in sent.values()) + 2048 + x_bytes
                    if asks and size + cost > GRADIENT_BYTES:
                        break
                    asks.append((t.set_params(self, sent) if sent else None, t.forward(self, [x], seed=seed)))
                    size += cost
                    moved = set(move)
                    i += 1
                back = t.set_params(self, {n: torch.from_numpy(np.ascontiguousarray(theta[n], dtype=kinds[n]))
                                           for n in moved}) if moved else None
                moved = set()
            for was_set, forward in asks:
                if was_set is not None:
                    was_set.get()
                r = forward.get()
                out.append(_loss(r.outputs[0] if r.outputs else None, W, r.dtypes[0] if r.dtypes else None,
                                 f"{self.cls}.forward"))
            if back is not None:
                back.get()
        return out

    def to(self, device):
        return self._req("to", {"device": device}, f"{self.cls}.to({device!r})")

    def attr_shape(self, name):
        return self._req("attr_shape", {"name": name}, f"{self.cls}.{name}")

    def on_meta(self, input_shape, input_dtype="float32", vocab=None, lenient=False):
        """Move the module to the meta device and run forward on a meta input there (see Probes.on_meta)."""
        refuse_meta_aware(self.sub, self.cls, self.cls)
        return self._req("on_meta", {"input_shape": list(input_shape), "input_dtype": input_dtype,
                                     "vocab": vocab, "lenient": bool(lenient)}, f"{self.cls} moved to another device")

    def swap_rows(self, name, i, j):
        """Swap rows i and j (token axis) of the module's tensor attribute `name`, in the worker."""
        return self._req("swap_rows", {"name": name, "i": int(i), "j": int(j)}, f"{self.cls}.{name}")

    def get_params(self, names):
        """{name: array} of these parameters (those the module has), read in the worker."""
        r = self._req("get_params", {"names": list(names)}, f"{self.cls}.named_parameters()",
                      expected_bytes=8 * self._numel(names))
        if not isinstance(r, dict):
            raise BadReturn(f"{self.cls}.named_parameters(): malformed answer")
        return r

    def set_params(self, values):
        """Overwrite the named parameters with these arrays, in the worker."""
        return self._req("set_params", {"values": dict(values)}, f"{self.cls} (setting its parameters)")


# ---------------------------------------------------------------- the gradient tests' message (vit and charlm)

DETACHED_HINT = ("part of the computation is cut off from autograd: a `.detach()` (for instance on the attention "
                 "weights after the softmax), a `torch.no_grad()` block or decorator, `.data`, a numpy round trip "
                 "or `.item()` inside it; compute what it returns from tensors that keep their graph (an "
                 "nn.Embedding built with padding_idx gives its row no gradient, although the model reads it)")


def _num(v):
    return f"{v:.4g}"


def gradient_failure_text(check, what, kind="parameters", output="logits", grad_of=lambda n: f"`{n}`.grad"):
    """The failure message of a GradientCheck that does not agree (None where it agrees)."""
    if check.no_graph:
        nones = (", ".join(grad_of(n) for n in check.parts) + " stay None" if check.parts
                 else "every parameter's .grad stays None")
        return (f"{what}: the {output} do not require grad, so backward reaches none of the {kind} ({nones}) "
                f"although the {output} depend on them: nothing can be trained through it."
                f"\nLikely mistake: {DETACHED_HINT}.")
    if check.agrees():
        return None
    flat = check.flat_parts()
    if flat:
        _skip(f"the gradient check could not be made: {what} gives the same {output} for small steps of "
                    f"{', '.join(flat[:4])}{' ...' if len(flat) > 4 else ''} while autograd gives them a slope, as a "
                    "forward that rounds to a low precision inside (a bfloat16 or float16 cast) does")
    wrong = check.disagreeing()
    steps = check.staircases([n for n, _a, _c in wrong])
    if wrong and len(steps) == len(wrong):
        _skip(f"the gradient check could not be made: {what} moves by jumps for small steps of "
              f"{', '.join(steps[:4])}{' ...' if len(steps) > 4 else ''} and agrees with autograd at larger ones, as a "
              "forward that rounds to a low precision inside (a bfloat16 or float16 cast) does")
    wrong = [w for w in wrong if w[0] not in steps]
    if wrong:
        listed = "; ".join(
            f"{'`' + n + '`' if kind == 'parameters' else n}"
            f"{' (' + grad_of(n) + ' is None)' if not check.parts[n]['has_grad'] else ''}: "
            f"the {output} move at {', '.join(_num(c) for c in moved)}, autograd says {', '.join(_num(a) for a in ad)}"
            for n, ad, moved in wrong[:5]) + (f"; and {len(wrong) - 5} more" if len(wrong) > 5 else "")
    else:
        listed = "all of them moved at once (no one alone shows it)"
    return (f"{what}: the gradient autograd gives does not match the finite differences of the {output}. With loss = "
            f"sum({output} * W) for a fixed random W, moving these {kind} a small step along random directions "
            f"changes the loss at one rate, while their gradients give another (per direction): {listed}. "
            + (f"Training follows the gradient, so these {kind} would be updated wrongly or not at all." if kind != "inputs"
               else "A model that calls it trains the projections that make these inputs wrongly or not at all.")
            + f"\nLikely mistake: {DETACHED_HINT}.")


def _skip(reason):
    import pytest
    pytest.skip(reason)
