"""What keeps one unit of student code (a cell, a top-level statement) from taking the worker with it.

What it is for: `UnitTimeout` and the alarm that raises it when a unit runs past its limit (`alarm`,
`alarm_left`: a unit met while another runs has its own limit, and the other gets back what it had left),
and `restore_builtins`, which puts back every name of the builtins module a unit changed, so that the
worker's own code (the loader, the request loop, the wire) keeps running on the real ones. The pristine
builtins are taken when this module is first imported, in the zygote, before any student code runs.
It runs in the worker, beside student code.

What it is not: a wall (`checker.worker.isolation` puts those up), nor the loader's bookkeeping of what a
unit did (`checker.worker.loader`).
"""

import signal

__all__ = ["UnitTimeout", "alarm", "alarm_left", "restore_builtins"]

_PRISTINE_BUILTINS = dict(vars(__import__("builtins")))


def restore_builtins():
    """Put back every name of the builtins module that code changed or removed (`builtins.max = ...`):
    the worker's own code (the loader, the request loop, the wire) runs on those names too, and an
    attack on them would crash the grader's side of the worker instead of only the student's own code."""
    current = vars(__import__("builtins"))
    for name, value in _PRISTINE_BUILTINS.items():
        if current.get(name, _PRISTINE_BUILTINS) is not value:
            current[name] = value


class UnitTimeout(BaseException):
    """Raised by the alarm when one cell or statement runs past its limit."""


def alarm_left():
    """The seconds left of the unit limit running now (0: none runs)."""
    return signal.getitimer(signal.ITIMER_REAL)[0] if hasattr(signal, "setitimer") else 0


def alarm(seconds):
    if not hasattr(signal, "setitimer"):
        return
    if seconds:
        def _raise(signum, frame):
            raise UnitTimeout()
        signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds or 0)
