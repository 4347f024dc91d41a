"""A submission's limits: per-call, per-submission and per-unit time, memory, and the size of an answer.

What it is for: `Limits`, the numbers a `checker.running.sandbox.SubmissionHandle` holds its worker to,
read from an assignment's spec (`Limits.from_spec`, where a shorter `--timeout` shrinks the per-call
limits with the budget), and the bound on one answer's bytes.

What it is not: what enforces them (the handle's clocks, the worker's walls in `checker.worker`).
"""

__all__ = ["Limits", "ANSWER_FACTOR", "MIN_CALL_S", "MIN_CELL_S"]

ANSWER_FACTOR = 64   # one answer may carry this many times the array bytes of its inputs (or answer_mb)
MIN_CALL_S = 0.5  # the shortest per-call limit a shrunken budget gives (a correct call takes milliseconds)
MIN_CELL_S = 2.0  # the shortest per-cell (per-statement) load limit a shrunken budget gives


class Limits:
    """Per-call, per-submission and per-unit wall-clock limits (s), the worker's memory cap (MiB)
    and the most data one answer may carry (MiB)."""

    def __init__(self, call_s=10.0, submission_s=120.0, cell_s=30.0, memory_mb=4096, reply_mb=256,
                 retry_call_s=2.0, answer_mb=32):
        self.call_s, self.submission_s, self.cell_s, self.memory_mb = call_s, submission_s, cell_s, memory_mb
        self.reply_mb = reply_mb
        # one answer may carry max(answer_mb, ANSWER_FACTOR x its inputs' array bytes), never above reply_mb:
        # a softmax of 4 numbers that answers 128 MiB is refused before a byte of it is read
        self.answer_mb = min(answer_mb, reply_mb)
        # a call that already failed to finish once gets this much the next times, so one hanging
        # function cannot spend the whole submission's budget and cost the other questions their tests
        self.retry_call_s = min(retry_call_s, call_s)

    @property
    def reply_bytes(self):
        return int(self.reply_mb * 2**20)

    def answer_bytes(self, sent_bytes=0, expected_bytes=0):
        """The most array bytes one answer may carry: answer_mb, or ANSWER_FACTOR times the bytes sent or
        expected when that is more, never above reply_mb."""
        return min(self.reply_bytes, max(int(self.answer_mb * 2**20), ANSWER_FACTOR * int(sent_bytes),
                                         ANSWER_FACTOR * int(expected_bytes)))

    @classmethod
    def from_spec(cls, spec, timeout=None):
        """The spec's limits; a `timeout` below the spec's budget shrinks the per-call limits with it.

        A per-call limit of 10 s under a 5 s budget would let one hanging
        function spend the whole budget at its first call and cost every
        other question its tests; scaled, it costs the share it costs at the
        spec's own budget (never below a floor a correct call needs).
        """
        lim = dict(spec.get("limits", {}))
        if timeout:
            base = cls(**lim)
            lim["submission_s"] = timeout
            share = min(1.0, timeout / base.submission_s)
            if share < 1.0:
                lim["call_s"] = max(MIN_CALL_S, base.call_s * share)
                lim["retry_call_s"] = max(MIN_CALL_S / 4, base.retry_call_s * share)
                lim["cell_s"] = max(MIN_CELL_S, base.cell_s * share)
        return cls(**lim)
