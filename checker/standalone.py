"""Grade one submission with plain pytest: the plugin's self-grading entry point.

What it is for: a TA debugging a grading test runs

    python -m pytest assignments/vit -p checker.standalone --hwcheck-submission my.ipynb

(`--hwcheck-assignment`, `--hwcheck-mode public|hidden`, `--hwcheck-seed` as
for `hwcheck`): this module's hooks open the submission with a
`checker.running.runner.Grader` (its sandboxed worker and walls, as in a batch) and
register `checker.running.plugin.HwcheckPlugin` on that handle, so the grading tests
get their fixtures; the worker is closed when pytest ends.

What it is not: the grading plugin itself (`checker.running.plugin`, which the
runner registers in process and which never imports the runner: this module
sits above both), or a scorecard (`checker.running.runner.Grader.grade` builds those).
"""

from checker.running.plugin import HwcheckPlugin
from checker.running.runner import Grader
from checker.spec import load_spec


def pytest_addoption(parser):
    group = parser.getgroup("hwcheck")
    group.addoption("--hwcheck-submission", default=None, help="submission to grade (.py, .ipynb or folder)")
    group.addoption("--hwcheck-assignment", default=None, help="assignment id (default: inferred)")
    group.addoption("--hwcheck-mode", default="public", choices=["public", "hidden"])
    group.addoption("--hwcheck-seed", default=None, type=int)


def pytest_configure(config):
    path = config.getoption("--hwcheck-submission", default=None)
    if not path:
        return
    grader = Grader(mode=config.getoption("--hwcheck-mode"), seed=config.getoption("--hwcheck-seed"))
    handle, aid, _note = grader.open(path, config.getoption("--hwcheck-assignment"))
    config._hwcheck = (grader, handle)
    config.pluginmanager.register(HwcheckPlugin(handle, load_spec(aid), mode=grader.mode, seed=grader.seed),
                                  "hwcheck-standalone")


def pytest_unconfigure(config):
    grader, handle = getattr(config, "_hwcheck", (None, None))
    if handle is not None:
        handle.close()
        grader.close()
