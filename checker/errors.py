"""The exceptions hwcheck raises, in one tree.

What it is for: naming every way grading a submission can go wrong, so the
plugin can turn each into a scorecard message and never into a traceback.
What it is not: a place for logic; raising happens where the failure is seen.

    HwcheckError                 a problem of hwcheck or of its inputs (exit 2)
    ├── SpecError                an assignment spec is missing or malformed
    ├── WireError                a frame from a worker is malformed or too big
    └── SandboxError             the zygote could not be started or reached
    GradingFailure (AssertionError)   a test of the student's work did not pass
    ├── MissingName              a name the test needs is not defined
    ├── StudentError             the student's code raised
    ├── StudentTimeout           the student's code ran past its time limit
    ├── WorkerCrashed            the worker died (exit, signal, memory)
    └── BadReturn                a returned value is not plain data

`GradingFailure` subclasses `AssertionError` so pytest reports it as a
failure; `outcome` says how the scorecard should label it.
"""

__all__ = [
    "HwcheckError", "SpecError", "WireError", "SandboxError",
    "GradingFailure", "MissingName", "StudentError", "StudentTimeout",
    "WorkerCrashed", "BadReturn",
]


class HwcheckError(Exception):
    """A problem of hwcheck itself or of what it was given."""


class SpecError(HwcheckError):
    """An assignment spec is missing or malformed."""


class WireError(HwcheckError):
    """A frame received from a worker is malformed or too large."""


class SandboxError(HwcheckError):
    """The zygote could not be started or reached."""


class GradingFailure(AssertionError):
    """A check of the student's work failed; `str(e)` is the message for the student."""

    outcome = "failed"

    def __init__(self, message, *, missing_names=()):
        super().__init__(message)
        self.message = message
        self.missing_names = list(missing_names)

    @property
    def hinted(self):
        """Whether the message already names a likely mistake: a line starting "Likely mistake", which only the
        grader writes (a student's words quoted into a message never start a line: running/answers.quoted), so
        an exception text of the student's own that holds those words keeps no hint away."""
        return any(line.startswith("Likely mistake") for line in str(self.message or "").splitlines())

    def retold(self, message):
        """The same failure (type and attributes, e.g. `where`) with another message: for hints."""
        err = type(self)(message, missing_names=self.missing_names)
        for key, value in vars(self).items():
            if key not in ("message", "missing_names"):
                setattr(err, key, value)
        return err


class MissingName(GradingFailure):
    outcome = "error"


class StudentError(GradingFailure):
    outcome = "error"
    exc_types = ()  # the names of the student's exception class and its bases ("HeadError", "ValueError", ...)


class StudentTimeout(GradingFailure):
    outcome = "timeout"


class WorkerCrashed(GradingFailure):
    outcome = "error"


class BadReturn(GradingFailure):
    outcome = "failed"
