"""hwcheck: an auto-grader and test harness for a transformer homework.

This package is the library and CLI. It holds no logic here: see the modules.
Worker side (runs beside student code): the `worker` subpackage (`zygote`,
`serve`, `isolation`, `loader`, `probes`); shared with it: `wire`, `errors`.
Trusted side: `sandbox` (over `zygote_client`, `submission_files`, `names`, `answers`),
`plugin`, `compare`, `by_hand`, `runner`, `batch`, `kit`, `spec`.
In a notebook: `check()` and `%hwcheck` (`notebook`, `notebook_html`).
Pure output: `scorecard`, `gradescope`, `gradebook`, `report`, `ci`, `atomic`.
Command line: `cli` over `options`. Exceptions: `errors`.
"""

__version__ = "0.1.0"

from checker.notebook import check  # noqa: E402 - `import checker; checker.check()` in a notebook
from checker.notebook import load_ipython_extension  # noqa: E402 - `%load_ext checker` gives `%hwcheck`

__all__ = ["__version__", "check", "load_ipython_extension"]
