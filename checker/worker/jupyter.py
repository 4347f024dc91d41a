"""What a Jupyter kernel gives a notebook's code that the worker imitates while a submission loads.

What it is for: `display(...)` and `get_ipython()` (a stand-in whose every attribute is a no-op callable),
bound in the submission's namespace, and `WrittenModules`, the import finder that serves the modules a
`%%writefile NAME.py` cell wrote, as the cell wrote them. It runs in the worker, beside student code.

What it is not: running the cells or the magics (`checker.worker.loader`), nor the stand-ins for
display-only packages a notebook imports (`checker.worker.stubs`).
"""

import os

__all__ = ["IPythonStub", "display", "WrittenModules"]


class IPythonStub:
    """Stands in for get_ipython(): every attribute is a no-op callable."""

    def __getattr__(self, name):
        return lambda *a, **k: None


def display(*objs, **kwargs):
    return None


class WrittenModules:
    """A finder for the modules `%%writefile NAME.py` cells wrote in the cwd (not on `sys.path`, so that a
    module the code itself writes while it runs is never imported): `import NAME` gets the text the cells
    wrote, which the trusted side's scan reads too, whatever the file holds now."""

    def __init__(self):
        self.sources = {}  # module name -> (path, text)

    def wrote(self, name, text, append):
        mod = name[:-3] if name.endswith(".py") else ""
        if mod.isidentifier() and os.path.basename(name) == name:
            path = os.path.abspath(name)
            self.sources[mod] = (path, (self.sources.get(mod, (path, ""))[1] if append else "") + text)

    def find_spec(self, name, path=None, target=None):
        if path is None and name in self.sources:
            import importlib.util
            return importlib.util.spec_from_loader(name, self, origin=self.sources[name][0])
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        path, text = self.sources[module.__name__]
        module.__file__ = path
        exec(compile(text, path, "exec"), module.__dict__)  # noqa: S102 - the cell's own text
