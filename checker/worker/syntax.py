"""What a unit's syntax tree says, without running it: the loader's reading of student code.

What it is for: `parse` (ast.parse, with a statement too deeply nested for
the parser told as the SyntaxError it is), `statements` (a file or cell cut
into its top-level statements, the loader's units), `assigned` (the names a
unit binds), `nested_defs` (the defs and classes inside its blocks, and
whether an `if __name__ == "__main__":` guard holds them), `trainer_defs`
and `training` (whether a unit trains a model or samples from it: a loop
calling `.backward()`, itself or through the submission's functions (a
step function), a call of a function holding such a loop, a `.generate()`
call), so that the loader can skip it. Pure functions of an `ast` tree.

What it is not: running anything, recording messages or deciding what to
tell the student (`checker.worker.loader`), nor reading files, notebooks
or IPython lines (`checker.worker.sources`). It runs in the worker; it
judges nothing.
"""

import ast

__all__ = ["parse", "statements", "nested_defs", "trainer_defs", "training", "assigned"]


def parse(src, filename):
    """ast.parse, with a statement nested too deeply for the parser (200,000 `.a` in a row: Python cannot
    compile it either) told as the SyntaxError it is, so it costs only itself."""
    try:
        return ast.parse(src, filename)
    except (RecursionError, MemoryError):
        raise SyntaxError("a statement is nested too deeply for Python's parser") from None


def statements(src, tree):
    """(first line, source) of each top-level statement; statements sharing a line (`a = 1; b = 2`) go together."""
    lines = src.splitlines(keepends=True)
    out, last_end = [], 0
    for node in tree.body:
        start = node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno
        if start <= last_end:  # on a line already sent with the previous statement
            continue
        end = node.end_lineno
        # a statement sharing its last line with the next one takes that one along
        out.append((start, "".join(lines[start - 1:end])))
        last_end = end
    return out


_BLOCKS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
           *((ast.TryStar,) if hasattr(ast, "TryStar") else ()), *((ast.Match,) if hasattr(ast, "Match") else ()))


def _is_main_guard(node):
    """`if __name__ == "__main__":` (either way round)."""
    test = node.test if isinstance(node, ast.If) else None
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return (any(isinstance(x, ast.Name) and x.id == "__name__" for x in sides)
            and any(isinstance(x, ast.Constant) and x.value == "__main__" for x in sides))


def nested_defs(body, guarded=False):
    """(def or class node, inside a main guard?) for each def/class statement in the blocks of these
    statements (if/for/while/with/try/match), not counting what functions and classes hold."""
    for node in body:
        if not isinstance(node, _BLOCKS):
            continue
        inner = guarded or _is_main_guard(node)
        for child in ast.iter_child_nodes(node):
            stmts = [child] if isinstance(child, ast.stmt) else []
            if isinstance(child, (ast.excepthandler, *((ast.match_case,) if hasattr(ast, "match_case") else ()))):
                stmts = child.body
            for st in stmts:
                if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    yield st, inner
                else:
                    yield from nested_defs([st], inner)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _calls_backward(node):
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
               for n in ast.walk(node))


def _trains_in_a_loop(node):
    """A loop in `node` that calls `.backward()`: gradient steps, i.e. training."""
    return any(isinstance(n, _LOOPS) and _calls_backward(n) for n in ast.walk(node))


def _called(node):
    """Names of the functions `node` calls by name (`f(...)`, not `obj.f(...)`)."""
    return {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _loop_callees(node):
    """Names the loops in `node` call by name."""
    return set().union(*(_called(n) for n in ast.walk(node) if isinstance(n, _LOOPS)))


def trainer_defs(tree):
    """What the loader keeps of this unit's top-level functions to tell training later, as one set: the name
    of each that trains by itself (a loop calling `.backward()` in its body), and facts as tuples (never
    equal to a name, so `name in trainers` still asks only the first): ("def", f) for each, ("backward", f)
    when f's body calls `.backward()`, ("calls", f, g) when it calls g, ("loop_calls", f, g) when a loop in
    it calls g."""
    out = set()
    for node in tree.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        out.add(("def", node.name))
        if _trains_in_a_loop(node):
            out.add(node.name)
        if _calls_backward(node):
            out.add(("backward", node.name))
        out.update(("calls", node.name, g) for g in _called(node))
        out.update(("loop_calls", node.name, g) for g in _loop_callees(node))
    return out


_DEPTH = 8  # how many calls deep a training step is looked for through the submission's functions


class _Graph:
    """The submission's functions as trainer_defs told them: which reach `.backward()` (a step) or a loop
    taking steps (training), through at most _DEPTH calls of one another, each function visited once."""

    def __init__(self, trainers):
        self.trainers, self.calls, self.loop_calls, self.backward = trainers, {}, {}, set()
        for fact in trainers:
            if isinstance(fact, tuple) and fact[0] == "backward":
                self.backward.add(fact[1])
            elif isinstance(fact, tuple) and fact[0] in ("calls", "loop_calls"):
                (self.calls if fact[0] == "calls" else self.loop_calls).setdefault(fact[1], set()).add(fact[2])
        self._steps = {}

    _last = (None, -1, None)  # (trainers, its size, its graph): the loader's set only grows, once per def

    @classmethod
    def of(cls, trainers):
        held, size, graph = cls._last
        if held is not trainers or size != len(trainers):
            graph = cls(trainers)
            cls._last = (trainers, len(trainers), graph)
        return graph

    def reach(self, names):
        """The submission's functions these names call, and what those call in turn, _DEPTH calls deep."""
        seen, level = set(), set(names)
        for _ in range(_DEPTH):
            level -= seen
            if not level:
                break
            seen |= level
            level = set().union(*(self.calls.get(f, ()) for f in level))
        return seen

    def steps(self, name):
        """Calling `name` calls `.backward()`, directly or through the submission's functions."""
        if name not in self._steps:
            self._steps[name] = not self.backward.isdisjoint(self.reach([name]))
        return self._steps[name]

    def trains(self, name):
        """Calling `name` runs a training loop: one calling `.backward()` (trainer_defs' names), or one
        calling a function that steps, in it or in a function it calls."""
        return any(f in self.trainers or any(self.steps(g) for g in self.loop_calls.get(f, ()))
                   for f in self.reach([name]))


def training(tree, trainers):
    """What in this one-statement unit trains a model, in words, or None: a loop calling `.backward()`,
    directly or through the submission's functions (`trainers`, what trainer_defs told of the units
    before), or a call of a function that trains. A statement that defines something (a def or class
    inside) is never skipped: the grader may need what it defines."""
    if len(tree.body) != 1:
        return None
    node = tree.body[0]
    if isinstance(node, (ast.Import, ast.ImportFrom)) or any(isinstance(n, _DEFS) for n in ast.walk(node)):
        return None
    if _trains_in_a_loop(node):
        return "a training loop (it calls .backward())"
    if any(g in trainers or ("def", g) in trainers for g in _called(node)):  # a function of the submission
        graph = _Graph.of(trainers)
        called = [n.func.id for n in ast.walk(node)
                  if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and graph.trains(n.func.id)]
        if called:
            return f"a call of {called[0]}(), which trains a model (a loop calling .backward())"
        if any(graph.steps(g) for g in _loop_callees(node)):
            return "a training loop (it calls .backward())"
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "generate"
           for n in ast.walk(node)):
        return "sampling text from the model (a .generate() call)"
    return None


def assigned(tree):
    """Top-level names a unit binds (defs, classes, assignments, imports)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names
