"""How calls and names are shown in messages, and which names look like a missing one.

What it is for: `call_text` names a call by its arguments' shapes and types;
`close_names` suggests the student's names closest to one a test needs, in
one bounded pass (a submission with 30,000 globals costs no more than its
first 500 candidates).

What it is not: a judge; pure text helpers with no process or file.
"""

import difflib
import re

__all__ = ["call_text", "close_names"]


def call_text(name, args, kwargs=None):
    """How a call is named in messages: `split_heads(array (4, 6) float64, 4)`: arrays by shape and dtype,
    numbers as they are, anything else by its type; cut at 160 characters."""
    def one(x):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            kind = "tensor" if type(x).__module__.startswith("torch") else "array"
            return f"{kind} ({', '.join(str(int(n)) for n in x.shape)}{',' if len(x.shape) == 1 else ''}) " \
                   f"{str(x.dtype).replace('torch.', '')}"
        if x is None or isinstance(x, (bool, int, float)):
            return repr(x)[:20]
        if isinstance(x, str):
            return repr(x[:20] + ("..." if len(x) > 20 else ""))
        if isinstance(x, (list, tuple)) and len(x) <= 4 and all(type(v) in (int, float, bool) for v in x):
            return repr(tuple(x) if isinstance(x, tuple) else list(x))  # sizes such as (4, 6): shown as they are
        if isinstance(x, (list, tuple)):
            return f"a {type(x).__name__} of {len(x)}"
        return type(x).__name__
    parts = [one(a) for a in args] + [f"{k}={one(v)}" for k, v in (kwargs or {}).items()]
    text = f"{name}({', '.join(parts)})"
    return text if len(text) <= 160 else text[:156] + "...)"


_CLOSE_CANDIDATES = 500  # names compared with difflib at most, per suggestion
_CLOSE_LONGEST = 80  # longer names are never compared (difflib is quadratic in a name's length)
_NORM = re.compile(r"[_\W]")


def _acronym(s):
    """The capitals of a CamelCase name (VisionTransformer -> VT, ViT -> VT)."""
    return "".join(c for c in s if c.isupper())


def close_names(name, names, n=3, cutoff=0.75, acronyms=False):
    """Names that look like `name`, closest first, and only close ones (an empty list says there is
    none): the same letters ignoring case and underscores, then difflib's ratio >= `cutoff`, then a
    shared long start, then (`acronyms`) the same CamelCase capitals (ViT for VisionTransformer).

    Linear in the number of names and bounded per suggestion: one pass over `names`; difflib compares
    at most _CLOSE_CANDIDATES names, each of a length that could reach the cutoff (names sharing the
    first letter first) and none longer than _CLOSE_LONGEST characters."""
    if not isinstance(name, str) or not name or len(name) > _CLOSE_LONGEST:
        return []
    key, caps = _NORM.sub("", name).lower(), _acronym(name)
    lo, hi = len(name) * cutoff / (2 - cutoff), len(name) * (2 - cutoff) / cutoff  # ratio's length bounds
    same, prefix, acronym, first, other = [], [], [], [], []
    for x in names:
        if not isinstance(x, str) or x == name or not x or len(x) > _CLOSE_LONGEST:
            continue
        if _NORM.sub("", x).lower() == key:
            same.append(x)
            continue
        if len(name) > 5 and len(x) > 3 and (x.startswith(name[:6]) or name.startswith(x)):
            prefix.append(x)
        if acronyms and len(caps) >= 2 and _acronym(x) == caps and name[0] == x[0]:
            acronym.append(x)
        if lo <= len(x) <= hi:
            (first if x[0].lower() == name[0].lower() else other).append(x)
    pool = (first + other)[:_CLOSE_CANDIDATES]
    near = difflib.get_close_matches(name, pool, n=n, cutoff=cutoff)
    out = []
    for x in same + near + prefix + acronym:
        if len(out) >= n:
            break
        if x not in out:
            out.append(x)
    return out
