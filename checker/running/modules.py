"""A student's nn.Module living in a worker, as the trusted side holds it (`sub.new(...)`), and what its
forward answered.

What it is for: `ModuleHandle` names the module by the handle the worker gave it and by the worker that
made it (a restarted worker no longer has it: a message, never another module's answer); its methods are
requests through the submission's handle (`checker.running.sandbox.SubmissionHandle.request`), bounded and
timed there. `ForwardResult` holds forward's outputs, their dtypes and devices.

What it is not: a place that runs student code or talks to a socket (`checker.running.sandbox` does), or a judge.
"""

from checker.errors import BadReturn, GradingFailure, WorkerCrashed
from checker.running.meta_scan import refuse_meta_aware

__all__ = ["ModuleHandle", "ForwardResult"]


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

    def grads(self, x, weight, seed=0):
        return self._req("grads", {"x": x, "weight": weight, "seed": int(seed)},
                         f"{self.cls} forward + backward (for the gradients)")

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
