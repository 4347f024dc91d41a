"""Would a student's module run on a GPU? Checked on any machine, with PyTorch's meta device.

What it is for: the grading tests of the torch assignments run on the CPU
everywhere and on CUDA only where a GPU exists, but the classic device bugs
(`torch.zeros(...)` or `torch.tril(...)` made in `forward` without
`device=`, a mask kept in a plain attribute instead of a buffer, an output
sent back with `.cpu()`) only show on another device. Moving the student's
module to the meta device and running it on a meta input, outside any device
context, makes every such tensor meet a tensor on another device, as it would
on CUDA. This module judges what that run gave (trusted side) and words the
message; `Probes.on_meta` does the run in the worker.

What it is not: a shape check of full-size models (that is
`Probes.meta_forward`, which builds inside a meta device context and so
cannot see these bugs), and not proof that CUDA works: the meta device
accepts some mixes that CUDA refuses; the one students meet, CPU indices
into an `nn.Embedding`, is refused by the probe itself.
"""

import re

from checker.errors import GradingFailure, StudentError

__all__ = ["META_ONLY", "MOVE_HINT", "NOT_CHECKED", "NO_CUDA", "CUDA_WALLED", "CUDA_ONLY", "gpu_skip_reason", "meta_only", "check_runs_on_another_device", "check_call_on_another_device"]

# What a module that fails on the meta device only because it looks at values raises there.
META_ONLY = ("cannot be called on meta tensors", "data-dependent", "data dependent", "register_meta",
             "meta_nonzero", "on meta tensors", "meta tensors do not", "is not supported on the meta",
             "meta device is not supported")

MOVE_HINT = ("a tensor made on the CPU inside the code (torch.zeros, torch.ones, torch.tril, torch.arange, "
             "torch.tensor, a helper such as causal_mask(T), ...) and not created with `device=x.device` or "
             "moved with `.to(x.device)`; or a tensor kept in a plain attribute instead of "
             "`self.register_buffer(...)` (`.to(device)` moves parameters and buffers only)")

_ELSEWHERE = ("PyTorch's `meta` device, which stands in for a GPU on this machine: a tensor on the CPU "
              "meets it the way it would meet a tensor on CUDA")


_TO_CPU = ("`.cpu()`, `.numpy()`, `.tolist()`, `torch.tensor(...)` of values, or `.to(...)` a fixed device "
           "(`.to('cpu')`, `.to(DEVICE)` with a notebook's DEVICE)")


# the reasons the grading plugin's fixtures give for a variant not run on a machine without a working GPU
# (checker.running.plugin), and only those: a student's message that says "CUDA" (a skip whose reason quotes
# their exception) is no such reason
NO_CUDA = "CUDA is not available on this machine: the cuda variant was not run"
CUDA_WALLED = ("CUDA is present on this machine but does not start inside the grader's walls ({}): the cuda "
               "variant was not run")
CUDA_ONLY = "{} is checked on CUDA only"
_GPU_SKIPS = re.compile("|".join([re.escape(NO_CUDA), re.escape(CUDA_WALLED).replace(r"\{\}", ".*"),
                                  re.escape(CUDA_ONLY).replace(r"\{\}", "(?:float16|bfloat16)")]), re.S)


def gpu_skip_reason(reason):
    """Is `reason`, a skip's reason, one of those the grading plugin gives for want of a GPU (the whole text)?"""
    return isinstance(reason, str) and _GPU_SKIPS.fullmatch(reason) is not None


def meta_only(message):
    """Is this error of the student's code only the meta device's limit (it cannot look at values)?"""
    said = _said(message)
    return any(s in said for s in META_ONLY)


NOT_CHECKED = ("not checked on another device: the code reads tensor values (.item(), bool(...), a "
               "data-dependent operation), which PyTorch's meta device, the grader's stand-in for a GPU, "
               "cannot do, and it failed even with stand-in values; a GPU run checks it")


def check_runs_on_another_device(module, input_shape, what, *, input_dtype="float32", vocab=None):
    """Run `module` (a ModuleHandle) on the CPU, then move it to the meta device and run it on a meta
    input of `input_shape` (token ids below `vocab` when given). Returns the output's shape, or a str:
    the reason the check could not be made (NOT_CHECKED, or the code fails on the CPU already, which
    other tests charge; not a device mistake), with which the caller skips its test. Code that reads
    values (`.item()`) is run again with stand-in values before giving up. Raises a GradingFailure that
    names the likely cause when it fails on the meta device only or answers on the CPU."""
    import torch
    x = (torch.randint(0, vocab, tuple(input_shape)) if vocab
         else torch.randn(tuple(input_shape), generator=torch.Generator().manual_seed(0)).to(getattr(torch, input_dtype)))
    cpu = _fails_on_cpu(lambda: module.forward([x]), what)
    if cpu:
        return cpu
    return _judge(lambda lenient: module.on_meta(input_shape, input_dtype, vocab, lenient=lenient),
                  f"The grader moved {what} to {_ELSEWHERE}", what)


def check_call_on_another_device(sub, name, shapes, what, *, dtype="float32"):
    """Call the student's function `name` with CPU tensors, then with meta tensors, of `shapes` (one
    per argument); the same judgement as check_runs_on_another_device."""
    import torch
    g = torch.Generator().manual_seed(0)
    args = [torch.randn(tuple(s), generator=g).to(getattr(torch, dtype)) for s in shapes]
    cpu = _fails_on_cpu(lambda: sub.call(name, *args), what)
    if cpu:
        return cpu
    return _judge(lambda lenient: sub.call_on_meta(name, shapes, dtype, lenient=lenient),
                  f"The grader called {what} with tensors on {_ELSEWHERE}", what)


def _fails_on_cpu(run, what):
    """The skip reason when the same run fails on the CPU: a device test would only charge that
    mistake a second time, under a misleading device hint. None when it runs."""
    try:
        run()
    except GradingFailure as e:
        first = e.message.strip().splitlines()[0] if e.message.strip() else type(e).__name__
        return (f"not checked on another device: {what} fails on the CPU already with this input, which the "
                f"other tests charge ({first[:300]})")
    return None


def _said(message):
    """The student's exception as it reads ("runtimeerror: expected all tensors ..."), without the file
    and line it came from (a file named devices.py says nothing about devices)."""
    said = message.split(" raised ", 1)[1] if " raised " in message else ""
    locs = list(re.finditer(r" at [^\n]*?, (cell \d+, )?line \d+(:|\n|$)", said))
    return (said[:locs[-1].start()] if locs else said).lower()


def _copies_out(message):
    """Did the code stop on the meta device because it copied a tensor to the CPU (`.cpu()`, `.numpy()`)?"""
    said = _said(message)
    return "copy out of meta" in said or "meta device type tensor to numpy" in said


def _copied_back(run, first, done, what):
    """The code copies a tensor to the CPU, which the meta device cannot do; on a GPU that is legal when the
    result comes back to the input's device (`.cpu()` ... `.to(x.device)`). Run it again with a CPU tensor
    of stand-in values for each copy: what comes back to the meta device passes; what stays on the CPU (it
    meets the meta weights, or it is the result) is charged with the first error's words."""
    try:
        r = run(True)
    except StudentError as again:
        said = _said(again.message)
        if meta_only(again.message) or not ("device" in said or _copies_out(again.message)):
            return NOT_CHECKED
        r = None
    if isinstance(r, dict) and r.get("device") == "meta":
        return r.get("shape")
    told = first.retold(f"{first.message}\n({done}.)\nLikely mistake: the code copies a tensor to the CPU "
                        f"({_TO_CPU}) and does not bring it back to the input's device (`.to(x.device)`); keep "
                        "the work on the input's device.")
    told.told_here = True  # _judge passes it on as it is (one hint, not two)
    raise told from None


def _own_raise(e):
    """Did a `raise` or `assert` of the student's own code stop it (its innermost line of theirs is one)? The
    meta device's limits (values it cannot read, copies it cannot make) are torch's errors, never the code's
    own: code that raises such words itself there is judged by them as by any other error."""
    where = getattr(e, "where", None)
    code = (str(where.get("code") or "") if isinstance(where, dict) else "").strip()
    # (an `assert` line stops with torch's own error where what it asserts reads a value: `.item()`)
    return re.match(r"raise\b", code) is not None or (re.match(r"assert\b", code) is not None
                                                      and "AssertionError" in getattr(e, "exc_types", ()))


def _judge(run, done, what):
    try:
        try:
            r = run(False)
        except StudentError as e:
            if _own_raise(e):
                raise
            if _copies_out(e.message):
                return _copied_back(run, e, done, what)
            if not meta_only(e.message):
                raise
            # it reads values: again, with stand-ins for them; only a device error counts then
            done += ", with stand-in values for what the code read from tensors (.item() gave 0)"
            try:
                r = run(True)
            except StudentError as again:
                said = _said(again.message)
                if meta_only(again.message) or not ("device" in said or "copy out of meta" in said):
                    return NOT_CHECKED
                raise
    except StudentError as e:
        if getattr(e, "told_here", False):
            raise
        said = _said(e.message)
        if re.match(r"typeerror: .*(required positional|keyword-only) argument", said):
            raise  # the call itself is wrong, on any device: the device would only mislead
        text = f"{e.message}\n({done}.)"
        if "copy out of meta" in said:
            text += (f"\nLikely mistake: the code copies a tensor to the CPU ({_TO_CPU}); keep the work on the "
                     "input's device.")
        elif "device" in said:
            text += f"\nLikely mistake: {MOVE_HINT}."
        raise e.retold(text) from None
    device = r.get("device") if isinstance(r, dict) else None
    if device != "meta":
        raise GradingFailure(
            f"{what} returned its result on {device} for inputs on another device ({done}): the result must "
            f"be on the input's device.\nLikely mistake: {_TO_CPU} on the result, or {MOVE_HINT}.")
    return r.get("shape")
