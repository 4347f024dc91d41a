"""Shared fixtures for hwcheck's own tests: one warm grader per session and mode; running alone.

The suite runs in parallel (`python -m pytest -q -n auto`, pytest-xdist): a test marked
`@pytest.mark.alone` (it times something against a limit, fills the machine's memory or processes, or needs
a fixed port) holds a lock no other test of the run holds meanwhile, so it runs with no test beside it
(`pytest_runtest_protocol` below, a readers-writer lock on a file of the run's shared temp folder, held
around the whole test with its fixtures' setup and teardown); without xdist the lock is never contended.
"""
import fcntl
import os

import pytest

from checker.running.runner import Grader


@pytest.fixture(scope="session")
def grader():
    with Grader(mode="public") as g:
        yield g


@pytest.fixture(scope="session")
def hidden_grader():
    with Grader(mode="hidden", seed=20261122) as g:
        yield g


# tests that run alone when the suite runs in parallel, by file (None: every test of it) and test name; a test
# may also say so itself with @pytest.mark.alone
ALONE = {
    # they fill a worker's disk bound (2 GiB written), its tasks and RLIMIT_NPROC, which is counted per user:
    # every worker of every test runs as nobody, so a test beside them would share their count
    "test_hostile_limits.py": None,
    # it runs the walls tests again under capsh, those above among them
    "test_wall_modes.py": None,
    # they time a worker's stop against its limit (a few seconds): a loaded machine would fail them
    "test_hostile.py": {"test_infinite_loop_at_import", "test_loop_that_swallows_the_alarm_at_import",
                        "test_infinite_loop_in_call",
                        "test_a_load_that_hangs_under_a_short_timeout_keeps_what_came_before",
                        "test_a_function_that_hangs_cannot_spend_the_other_questions_time",
                        "test_a_grader_killed_by_sigkill_leaves_nothing"},
    # a deadline of a few seconds, and a kill that must land while the batch is still grading
    "test_batch.py": {"test_a_replacement_worker_reaches_the_zygote_whoever_read_its_ready_message",
                      "test_kill_midway_then_resume_loses_nothing_and_grades_nothing_twice"},
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        names = ALONE.get(item.path.name, ())
        if names is None or getattr(item, "originalname", item.name) in names:
            item.add_marker(pytest.mark.alone)


def _lock_files(config):
    """Two lock files every xdist worker of this run sees: the workers' base temps share a parent."""
    root = config._tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    return os.path.join(root, "hwcheck-alone.gate"), os.path.join(root, "hwcheck-alone.lock")


_LOCKS = {}  # this process's two descriptors, opened at its first test


def _alone_locks(config):
    if not _LOCKS:
        gate_path, lock_path = _lock_files(config)
        _LOCKS["gate"] = os.open(gate_path, os.O_RDWR | os.O_CREAT, 0o600)
        _LOCKS["lock"] = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
    return _LOCKS["gate"], _LOCKS["lock"]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """A test marked `alone` holds the lock exclusively; every other test holds it shared. The gate, taken
    first by both, keeps new tests from starting while an `alone` test waits for those running to end.

    Held around the whole item, its setup and teardown included, not by a function fixture: a module or session
    fixture (a batch graded once for a module's tests, a Dask cluster, a kit build) is set up in the setup of
    the first test that asks for it and torn down in the teardown of the last, and a function fixture's lock
    is taken only after those, so they ran beside an `alone` test (a flake hunter saw a module fixture's 3 s
    of work overlap one)."""
    gate, lock = _alone_locks(item.config)
    alone = item.get_closest_marker("alone") is not None
    fcntl.flock(gate, fcntl.LOCK_EX)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
    finally:
        if not alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
    try:
        yield
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        if alone:
            fcntl.flock(gate, fcntl.LOCK_UN)
