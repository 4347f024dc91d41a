"""checker.running.limits: a submission's limits (the handle and its worker are driven by test_hostile and test_loader)."""


def test_a_short_timeout_shrinks_the_per_call_limits_with_it():
    from checker.running.limits import MIN_CALL_S, Limits
    spec = {"limits": {"call_s": 10, "submission_s": 120}}
    assert Limits.from_spec(spec).call_s == 10
    assert Limits.from_spec(spec, 600).call_s == 10             # a longer budget keeps the spec's limit
    short = Limits.from_spec(spec, 30)
    assert short.submission_s == 30 and short.call_s == 2.5 and short.retry_call_s == 0.5
    assert Limits.from_spec(spec, 1).call_s == MIN_CALL_S
