"""Stand-ins for the packages a notebook uses only to show things, where they are not installed in the worker.

What it is for: a student's notebook imports matplotlib, seaborn, tqdm, IPython's display, ipywidgets, wandb or
Colab's google.colab around the graded work; where one is missing, importing it gives a stand-in whose every
call, attribute, index, iteration and `with` does nothing (`_DisplayStubs`, last on sys.meta_path), so those
lines cost nothing and are said once (`used`). tqdm's notebook bars, which need ipywidgets, are tqdm's text bars
there (`_TextBars`, first on sys.meta_path).
What it is not: the loader (`checker.worker.loader` puts these on sys.meta_path for a load), or a stand-in for
any package that computes something graded.
"""

import sys

__all__ = ["DISPLAY_ONLY", "DisplayStubs", "TextBars"]


# Packages that only show things (plots, progress bars, notebook widgets, experiment loggers). When one is
# not installed where the grader runs, importing it gives a stand-in whose every call does nothing, so a
# notebook's plotting lines cost nothing. Only used after the real import has failed.
# packages a notebook uses only around the graded work -> what they do there (none of it is graded)
DISPLAY_ONLY = {"matplotlib": "plots", "seaborn": "plots", "plotly": "plots", "tqdm": "progress bars",
                "IPython": "notebook display", "ipywidgets": "notebook widgets (tqdm.notebook's bars are text bars)",
                "wandb": "experiment logging",
                "google": "Colab's own tools, such as mounting Google Drive"}


class _DummyType(type):
    """The stand-in's class is a stand-in too: a stub module's names are the class itself, so code can subclass
    one (`class TqdmHBox(HBox)` in tqdm.notebook, with ipywidgets missing), call, index or iterate it."""

    def __getattr__(cls, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Dummy

    def __getitem__(cls, key):
        return _Dummy()

    def __setitem__(cls, key, value):
        pass

    def __iter__(cls):
        return iter((_Dummy(), _Dummy()))


class _Dummy(metaclass=_DummyType):
    """Accepts any call, attribute, index, iteration (two items: `fig, ax = plt.subplots()`) or `with`."""

    def __init__(self, *args, **kwargs):
        pass

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Dummy()

    def __call__(self, *args, **kwargs):
        return _Dummy()

    def __getitem__(self, key):
        return _Dummy()

    def __setitem__(self, key, value):
        pass

    def __iter__(self):
        return iter((_Dummy(), _Dummy()))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class _StubModule(type(sys)):
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Dummy


def _tqdm(iterable=None, *args, **kwargs):
    return iterable if iterable is not None else _Dummy()


class DisplayStubs:
    """A meta path finder, last in line, that stands in for missing display-only packages."""

    def __init__(self):
        self.used = set()

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery
        if fullname.split(".")[0] not in DISPLAY_ONLY:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        module = _StubModule(spec.name)
        module.__path__ = []
        if spec.name.split(".")[0] == "tqdm":
            module.tqdm, module.trange = _tqdm, (lambda *a, **k: range(*a))
        self.used.add(spec.name.split(".")[0])
        return module

    def exec_module(self, module):
        pass


class TextBars:
    """A meta path finder, first in line, for tqdm's notebook bars where ipywidgets is missing: `tqdm.notebook`
    (and `tqdm.auto`'s `tqdm.autonotebook`) are tqdm's plain text bars, as tqdm.auto gives outside a notebook
    (tqdm.notebook itself would import the widgets' stand-ins and fail in its first bar)."""

    NAMES = ("tqdm.notebook", "tqdm.autonotebook")

    def __init__(self, stubs):
        self.stubs = stubs  # a DisplayStubs: what was stood in for, said once

    def find_spec(self, fullname, path=None, target=None):
        import importlib.machinery
        if fullname not in self.NAMES:
            return None
        try:  # installed on sys.path (importlib.util.find_spec would find the display stand-in's)
            if importlib.machinery.PathFinder.find_spec("ipywidgets") is not None \
                    or importlib.machinery.PathFinder.find_spec("tqdm") is None:
                return None
        except (ImportError, ValueError):
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        import tqdm.std
        module = type(sys)(spec.name)
        module.tqdm, module.trange = tqdm.std.tqdm, tqdm.std.trange
        module.tqdm_notebook, module.tnrange = tqdm.std.tqdm, tqdm.std.trange
        self.stubs.used.add("ipywidgets")
        return module

    def exec_module(self, module):
        pass

