"""hwcheck: an auto-grader and test harness for a transformer homework.

This package is the library and CLI. It holds no logic here: see the modules
(`wire`, `zygote`, `worker`, `sandbox`, `loader`, `probes`, `compare`,
`plugin`, `scorecard`, `gradescope`, `gradebook`, `cli`, ...).
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
