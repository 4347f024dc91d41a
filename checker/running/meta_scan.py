"""Whether a student's code looks for PyTorch's meta device, read from its source on the trusted side.

What it is for: the device tests run a student's code on the meta device, the grader's stand-in for a GPU when
it has none. Code that tells the meta device apart (`x.is_meta`, a "meta" device string) can answer there what
it would not on a GPU, so `refuse_meta_aware` fails such a test, saying why, instead of judging its run;
`_no_meta_in` is the quick look that skips the source scan for a one-file submission that never spells "meta".

What it is not: a wall (the worker's walls hold whatever the code does) or a judge of answers (a device test
judges its run); the source scan itself is `checker.running.by_hand`'s.
"""

from checker.errors import GradingFailure

__all__ = ["refuse_meta_aware", "META_ATTRS", "META_STRINGS"]


# what, in the source, tells the meta device (the grader's stand-in for a GPU) apart: code that reaches one of these
# is not run there (refuse_meta_aware)
META_ATTRS = frozenset({"is_meta"})
META_STRINGS = frozenset({"meta"})


def refuse_meta_aware(sub, name, what):
    """Raise a GradingFailure when the code of `name` (its source, read on this side, and all it reaches:
    `checker.running.by_hand.library_use`) looks for the meta device (`x.is_meta`, a "meta" device string):
    such code can answer there what it would not answer on a GPU (an empty tensor of the right shape, the
    error a data-dependent operation raises), so a run of it on the meta device says nothing. Read once
    per name and submission (`sub.meta_named`; its key None: whether the one file spells "meta" at all)."""
    named = getattr(sub, "meta_named", None)
    if not isinstance(named, dict) or not isinstance(getattr(sub, "path", None), str):
        return  # not a submission's handle (a test's stand-in)
    if name not in named:
        if None not in named:  # the file-level look, once per submission (`None` is no name)
            named[None] = _no_meta_in(sub.path, getattr(sub, "secrets", ()))
        if named[None]:
            named[name] = []  # its one file never says "meta": no need to read what the name reaches (~10-20 ms)
        else:
            from checker.running.by_hand import library_use
            named[name] = library_use(sub.path, name, META_ATTRS, getattr(sub, "secrets", ()), META_STRINGS).used
    if named[name]:
        raise GradingFailure(
            f"{what} was not run on the meta device: your code looks for PyTorch's `meta` device "
            f"({', '.join(named[name][:3])}), which stands in for a GPU on this grader, so what it does there "
            "says nothing about a GPU. Code that runs on any device needs no such test: remove it.")


def _no_meta_in(path, secrets=()):
    """Is `path` a one-file submission (.py or notebook) whose bytes never spell "meta" (a notebook's own "metadata"
    keys aside), read by grading's rules, and spell nothing Python reads as other letters (all ASCII, no `\\x`,
    `\\u`, `\\N` or octal escape, no `coding:` line)? Then no name or string of it is "meta" or `is_meta` as the
    source scan would read them. False for anything else (a folder, an archive it imports: the scan reads those).
    Neither reading follows code that builds the word at run time (`"me" + "ta"`)."""
    import re
    from checker.running.safe_read import Refused, read_bytes
    if not str(path).endswith((".py", ".ipynb")):
        return False
    try:
        data = read_bytes(path, secrets=secrets)
    except (Refused, OSError, ValueError):
        return False
    if not data.isascii() or re.search(rb"coding[:=]|\\[xuUN0-7]", data):
        return False
    return re.search(rb"(?i)meta(?!data)", data) is None
