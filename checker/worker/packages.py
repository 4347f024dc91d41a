"""The modules of a folder submission, imported as Python imports them.

What it is for: a folder submission may hold a package (`hw/__init__.py`, `hw/model.py`) whose modules
import each other, often relatively (`from .attention import MultiHeadSelfAttention`, `from . import
layers`). Run into the submission's one namespace, as a folder's other files are, such a file cannot
resolve a relative import, and two of its modules' private helpers of one name overwrite each other.
Here each module of such a package is a real module (`hw.model` in `sys.modules`, with its own
globals), imported by name, relatively or not, and run by the Loader one top-level statement at a time
as every file is (a failing statement costs only itself, training is not run); what it defines is then
added to the submission's namespace, so the graded names are found wherever the package defines them.
So is a file directly in one of the folders its imports look in (checker.worker.roots) that a file of
the submission imports by its name (`from attention import MultiHeadSelfAttention` in model.py): it is
module `attention`, as in Python, not a file run into the one namespace whose helpers a later file's
helpers of the same name would replace. A module starts with what the files run before it defined (as
the one namespace had it: a file that uses another's `np` without importing it still runs), and its own
statements replace those names in it alone.

What it is not: an import system for anything but the submission's own files, by the names their
folders give them (the submission's own folder is never a package: in a batch its name is the
student's), nor trusted: it runs in the worker, beside student code.
"""

import importlib
import importlib.util
import os

from checker.worker.roots import imported_names

__all__ = ["PackageModules", "module_files", "package_name"]


def module_files(path, roots, units):
    """[(module name, file)] of the files of the folder submission `path` that are modules: those of its
    packages, and those directly in one of `roots` (its import roots, in `sys.path` order) that a file of
    it imports by name. `units`: its files (checker.worker.sources.list_units)."""
    out = [(name, f) for f in units if f.endswith(".py") for name in [package_name(path, f)] if name]
    wanted = imported_names(path)
    for root in roots:
        for f in units:
            stem = os.path.basename(f)[:-3]
            if f.endswith(".py") and os.path.dirname(f) == root and stem in wanted and stem.isidentifier():
                out.append((stem, f))
    return out


def package_name(path, f):
    """The dotted module name of the .py file `f` of the folder submission `path` where a package holds
    it (its folder, below `path`, has an `__init__.py`), else None."""
    folder, parts = os.path.dirname(f), []
    while (folder.startswith(path + os.sep) and folder != path
           and os.path.isfile(os.path.join(folder, "__init__.py"))):
        parts.insert(0, os.path.basename(folder))
        folder = os.path.dirname(folder)
    if not parts:
        return None
    stem = os.path.splitext(os.path.basename(f))[0]
    name = ".".join(parts + ([] if stem == "__init__" else [stem]))
    return name if all(p.isidentifier() for p in name.split(".")) else None


class PackageModules:
    """A meta-path finder and loader for the modules of a folder submission's packages (see the module
    doc). `run_file(namespace, path, shown)` runs one file into a module's namespace."""

    def __init__(self, run_file):
        self.files = {}  # dotted name -> (path, shown path, is a package's __init__)
        self.name_of = {}  # path -> its dotted name
        self.run_file = run_file

    def add(self, name, f, shown):
        """`f` is module `name` (the first file met of a name keeps it: the walk goes shallow first)."""
        if name not in self.files:
            self.files[name] = (f, shown, os.path.basename(f) == "__init__.py")
            self.name_of[f] = name

    def find_spec(self, name, path=None, target=None):
        entry = self.files.get(name)
        if entry is None:
            return None
        f, _, package = entry
        return importlib.util.spec_from_file_location(
            name, f, loader=self, submodule_search_locations=[os.path.dirname(f)] if package else None)

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        f, shown, _ = self.files[module.__name__]
        self.run_file(module.__dict__, f, shown)
