"""One grading item's setup, call and teardown without pytest's per-item hooks, where only hwcheck's own plugins
would take part in them.

What it is for: a `GradingSession` runs every item of a submission through pytest's `pytest_runtest_protocol`:
three `CallInfo`s, three reports, each passed through `pytest_runtest_makereport`, `pytest_runtest_logreport`
(the JSON report, the terminal, the session's counters) and `pytest_report_teststatus`, a hook call for every
plugin at every step. For a passing item none of it changes what the scorecard reads, and a failing item
pays for pytest's long traceback (`_format_failed_longrepr`) that the grading plugin replaces at once with
the failure's own message. `run_item` does what those hooks do for the grading plugin and the JSON report and
nothing else: fixtures are set up and torn down by pytest's own `SetupState` and `FixtureRequest`, the test
is called by pytest's `pytest_pyfunc_call` (through `item.runtest()`), assertions are rewritten and explained
as under pytest's assertion plugin, and the JSON report's entry is made by pytest-json-report's own `make_*`
functions. A skip, or an exception other than a `GradingFailure`, gets pytest's own report.

`usable(config)` says whether the session's plugins are those it stands in for (any other plugin with a
per-item hook, a conftest's included, or an option such as --maxfail, -x, --pdb: not usable, and every item
goes through pytest's protocol); `eligible(item)` whether one item is plain enough (a function with no
skip/skipif/xfail mark). The scorecards are the same either way (tests/test_lean_protocol.py).

What it is not: a test runner of its own (collection, fixtures and the call stay pytest's), a judge or a
scorecard builder; nor public pytest API (it uses `_pytest.runner`, `_pytest.assertion` and item internals, as
`session` does; `usable` is False where they are missing).
"""

import json

__all__ = ["usable", "eligible", "run_item"]

# the per-item hooks run_item stands in for, and the plugins that may implement them (as pytest 8-9 and
# pytest-json-report 1.5 register them, with hwcheck's grading plugin): any other implementation is someone
# else's say in an item's run (a conftest's hook, a plugin of the TA's -p), and pytest's protocol runs
_HOOKS = {
    "pytest_runtest_protocol": {"_pytest.runner", "_pytest.assertion", "pytest_jsonreport.plugin.JSONReport",
                                "_pytest.unittest", "_pytest.faulthandler", "_pytest.warnings"},
    "pytest_runtest_logstart": {"_pytest.terminal.TerminalReporter"},
    "pytest_runtest_logfinish": {"_pytest.terminal.TerminalReporter"},
    "pytest_runtest_setup": {"_pytest.runner", "_pytest.skipping", "_pytest.capture.CaptureManager",
                             "pytest_jsonreport.plugin.JSONReport", "checker.running.plugin.HwcheckPlugin",
                             "_pytest.nose"},
    "pytest_runtest_call": {"_pytest.runner", "_pytest.skipping", "_pytest.capture.CaptureManager",
                            "pytest_jsonreport.plugin.JSONReport"},
    "pytest_runtest_teardown": {"_pytest.runner", "_pytest.capture.CaptureManager",
                                "pytest_jsonreport.plugin.JSONReport"},
    "pytest_runtest_makereport": {"_pytest.runner", "_pytest.skipping", "_pytest.tmpdir", "_pytest.unittest",
                                  "checker.running.plugin.HwcheckPlugin", "pytest_jsonreport.plugin.JSONReport"},
    "pytest_runtest_logreport": {"pytest_jsonreport.plugin.JSONReport", "_pytest.terminal.TerminalReporter",
                                 "_pytest.main.Session"},
    "pytest_report_teststatus": {"_pytest.terminal", "_pytest.runner", "_pytest.skipping", "_pytest.subtests"},
    "pytest_json_runtest_metadata": {"checker.running.plugin.HwcheckPlugin"},
    "pytest_json_runtest_stage": {"pytest_jsonreport.plugin.JSONReport"},
    "pytest_exception_interact": set(),
    "pytest_assertion_pass": set(),
}
_SKIPPING_MARKS = ("skip", "skipif", "xfail")
# the JSON report's fields run_item never makes (the grader omits them: checker.running.runner.PYTEST_ARGS)
_OMITTED = {"keywords", "streams", "log", "traceback"}


def _plugin_name(plugin):
    name = getattr(plugin, "__name__", None)
    return name if isinstance(name, str) else f"{type(plugin).__module__}.{type(plugin).__qualname__}"


def usable(config):
    """True where run_item may stand in for pytest's protocol in this session (see the module's docstring)."""
    try:
        from _pytest.assertion import pytest_runtest_protocol  # noqa: F401
        from _pytest.runner import CallInfo, get_reraise_exceptions  # noqa: F401
        from pytest_jsonreport import serialize  # noqa: F401
        opt = config.option
        if getattr(opt, "maxfail", 0) or getattr(opt, "usepdb", False) or getattr(opt, "stepwise", False) \
                or getattr(opt, "setupshow", False) or getattr(opt, "setuponly", False) \
                or getattr(opt, "setupplan", False) or not _OMITTED <= set(getattr(opt, "json_report_omit", None) or ()):
            return False
        for hook, allowed in _HOOKS.items():
            caller = getattr(config.hook, hook, None)
            if caller is None:
                return False
            if any(_plugin_name(impl.plugin) not in allowed for impl in caller.get_hookimpls()):
                return False
        return True
    except Exception:  # noqa: BLE001 - internals moved: pytest's protocol
        return False


def eligible(item):
    """True for a plain test function with no mark that pytest's skipping plugin acts on (worked out once per
    item: a GradingSession asks again for every submission, and an item's marks are fixed at collection)."""
    import pytest
    cached = getattr(item, "_hwcheck_lean", None)
    if cached is None:
        cached = (type(item) is pytest.Function and hasattr(item, "_request")
                  and not any(True for name in _SKIPPING_MARKS for _ in item.iter_markers(name)))
        item._hwcheck_lean = cached
    return cached


def run_item(item, nextitem, plugin, json_tests):
    """Set up, call and tear down `item` as pytest's protocol would, label it through `plugin` (the
    HwcheckPlugin) and put its JSON report entry into `json_tests` (pytest-json-report's, by node id)."""
    from _pytest import assertion
    from _pytest.runner import CallInfo, get_reraise_exceptions

    reraise = get_reraise_exceptions(item.config)
    setupstate = item.session._setupstate
    # assertions explained as pytest's assertion plugin explains them, around the whole item as it does
    explaining = assertion.pytest_runtest_protocol(item)
    next(explaining)
    try:
        if not item._request:  # run again (a GradingSession runs each item once per submission)
            item._initrequest()
        plugin.pytest_runtest_setup(item)
        call = CallInfo.from_call(lambda: setupstate.setup(item), when="setup", reraise=reraise)
        stages = [(call, _stage(item, call, plugin))]
        if stages[0][1]["outcome"] == "passed":
            call = CallInfo.from_call(item.runtest, when="call", reraise=reraise)
            stages.append((call, _stage(item, call, plugin)))
        if item.session.shouldfail or item.session.shouldstop:
            nextitem = None
        call = CallInfo.from_call(lambda: setupstate.teardown_exact(nextitem), when="teardown", reraise=reraise)
        stages.append((call, _stage(item, call, plugin)))
    finally:
        item._request = False
        item.funcargs = None
        try:
            explaining.send(None)
        except StopIteration:
            pass
    # pytest-json-report's entry, its keys in the order its logreport hook gives them
    entry = {"nodeid": item.nodeid, "lineno": item.location[1], "outcome": "passed"}
    metadata = plugin.pytest_json_runtest_metadata(item, None)
    if metadata and _serializable(metadata):
        entry["metadata"] = metadata
    for call, stage in stages:
        when = call.when
        if stage["outcome"] == "failed":
            entry["outcome"] = "failed" if when == "call" else "error"
        elif stage["outcome"] == "skipped":
            entry["outcome"] = "skipped"
        entry[when] = stage
    json_tests[item.nodeid] = entry


def _stage(item, call, plugin):
    """The JSON report's stage for one phase (pytest-json-report's make_teststage), after the plugin's label."""
    if call.excinfo is None:
        plugin.label_report(item, call, None)  # nothing to label; as each phase's report passes the plugin
        return {"duration": call.duration, "outcome": "passed"}
    from _pytest.reports import TestReport
    from pytest_jsonreport import serialize
    from checker.errors import GradingFailure
    if isinstance(call.excinfo.value, GradingFailure):
        # its message replaces pytest's long traceback (the grading plugin's label): that is never made
        report = TestReport(item.nodeid, item.location, {}, "failed", None, call.when, (),
                            call.duration, call.start, call.stop)
    else:
        report = TestReport.from_item_and_call(item, call)
    plugin.label_report(item, call, report)
    return serialize.make_teststage(report, None, None, None, True)


def _serializable(value):
    try:
        json.dumps(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True
