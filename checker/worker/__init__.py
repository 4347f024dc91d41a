"""The worker side of the trust boundary: code that runs where student code runs.

What it is for: everything a worker process needs, and nothing more. The
zygote (`python -m checker.worker.zygote`) imports torch and these modules,
then forks one worker per submission; the worker puts up its walls
(`isolation`), loads the submission (`loader`), and answers calls and probes
(`probes`, `serve`) in plain data (`checker.wire`, shared with the trusted
side). Holds no logic here.

What it is not: trusted. Nothing in this package may import the trusted side
(`assignments` with the references and grading tests, and every layer of checker/: `platforms`,
`records`, `running`, `render`, `judging`, `spec`, the CLI): an import-linter contract in
pyproject.toml, checked by tests/test_layers.py, keeps it so. Its only imports
from hwcheck are `checker.wire` and `checker.errors`.
"""
