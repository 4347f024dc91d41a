"""hwcheck: an auto-grader and test harness for a transformer homework.

This package is the library and CLI. It holds no logic here: see the modules, in layers that each
import only the ones below them (docs/DESIGN.md, kept by import-linter):
  `cli` over `options` (the command line); `standalone` (plain pytest grading one submission);
  `platforms`: Gradescope, CI and Classroom, notebooks (`check()`, `%hwcheck`), the student kit, a
      cluster, `validate`;
  `records`: a batch and the TA's records (the output folder's one owner, `owned`), the class report;
  `running`: the trusted side's hold on student code (`sandbox`, `runner`, the pytest `plugin`);
  `render` and `judging`: pure functions (reports and escaping; comparison, hints, scorecards);
  `spec`, `wire`, `errors`: shared by all, the last two with the worker side.
Worker side (runs beside student code): the `worker` subpackage, which imports only `wire` and `errors`.
"""

from checker._version import __version__  # noqa: F401

from checker.platforms.notebook import check  # noqa: E402 - `import checker; checker.check()` in a notebook
from checker.platforms.notebook import load_ipython_extension  # noqa: E402 - `%load_ext checker` gives `%hwcheck`

__all__ = ["__version__", "check", "load_ipython_extension"]
