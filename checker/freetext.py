"""Find a student's written answer to a question graded by a person (attention's `Q3-text`).

What it is for: the person who grades a free-text question needs the text, and
the student needs to know it was found. The answer is where the starter
notebook asks for it: the markdown cell under the question's heading
(`## Q3-text ...`, after `**Your answer:**`; or a line labelled
`**Q3-text:** ...`) and the markdown cells that follow it up to the next
heading or code cell (code cells run between the heading and a first answer
are stepped over); in a `.py` file, the comment lines
after a line that names the question (`# Q3-text`), or a top-level string
assigned to a name like `Q3_text`. `find_answers` reads the submission's files
as text on the trusted side.

What it is not: a grader (nobody scores the text here), and never a reader of
anything but the submission's own regular files: links are not followed, files
are read with a size cap, and only .ipynb/.py/.md/.txt files are looked at, so
a submission cannot make the scorecard quote another file.
"""

import ast
import json
import os
import re
import stat

__all__ = ["MAX_ANSWER", "find_answers", "answer_in_notebook", "answer_in_python"]

MAX_ANSWER = 4000  # characters kept of one answer
_MAX_FILE = 4 * 1024 * 1024
_MAX_FILES = 200
_SUFFIXES = (".ipynb", ".py", ".md", ".txt")
_PROMPT = re.compile(r"^\s*(\*\*|__)?\s*(your|my) answer\b\s*:?\s*(\*\*|__)?\s*:?\s*", re.IGNORECASE | re.MULTILINE)
_PLACEHOLDER = re.compile(r"^\(?\s*replace this (line|text)[^)\n]*\)?\s*$|^\.\.\.$|^TODO\.?$", re.IGNORECASE)
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s")


def _names(qid):
    """How the question is written in a heading or a variable: Q3-text, Q3 text, Q3_text."""
    parts = [re.escape(p) for p in re.split(r"[-_ ]+", str(qid)) if p]
    # "Q3-text", "Q3 text", "Q3_text", "Q3 - text", "Q3 – text", "Q3: text"
    return re.compile(r"(?<![\w-])" + r"\s*[-_:\u2013\u2014]?\s*".join(parts) + r"(?![\w-])", re.IGNORECASE)


def _label(line, name):
    """The rest of a line that starts by naming the question in bold or with a colon
    (`**Q3-text:** my answer`, `Q3-text: my answer`), or None."""
    m = re.match(r"^\s*(?:[-*]\s+)?(\*\*|__)?\s*", line)
    rest = line[m.end():]
    found = name.match(rest)
    if not found:
        return None
    after = rest[found.end():]
    tail = re.match(r"^\s*(?:\([^)]*\))?\s*:?\s*(\*\*|__)?\s*:?", after)
    if not (m.group(1) and tail.group(1)) and ":" not in tail.group(0):
        return None  # a sentence that happens to start with the name, not a label
    return after[tail.end():]


def _plain(line):
    return re.sub(r"\s+", " ", re.sub(r"[*_`>]", "", line)).strip().lower()


def _clean(text, prompt=None):
    """The answer without the 'Your answer:' prompt, the handout's question and the placeholder, or
    None when nothing is left."""
    text = _PROMPT.sub("", text, count=1).strip()
    asked = _plain(prompt) if prompt else None
    lines = [line for line in text.splitlines()
             if not _PLACEHOLDER.match(line.strip()) and not (asked and _plain(line) == asked)]
    text = "\n".join(lines).strip()
    return text[:MAX_ANSWER] if text else None


def answer_in_notebook(nb, qid, prompt=None):
    """The answer to `qid` in a parsed notebook dict, or None (`prompt`: the handout's question, not an
    answer)."""
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if cells is None and isinstance(nb, dict) and isinstance(nb.get("worksheets"), list):  # nbformat 3
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
                 for c in ws["cells"]]
    if not isinstance(cells, list):
        return None
    name = _names(qid)
    for i, cell in enumerate(cells):
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            answer = answer_in_python(_source(cell), qid, prompt)  # `# Q3-text` comments in a code cell
            if answer:
                return answer
        if not isinstance(cell, dict) or cell.get("cell_type") != "markdown":
            continue
        text = _source(cell)
        heading = next((line for line in text.splitlines() if _HEADING.match(line) and name.search(line)), None)
        label = None
        if heading is None:
            heading = next((line for line in text.splitlines() if _label(line, name) is not None), None)
            if heading is None:
                continue
            label = _label(heading, name)
        parts = [(label or "") + text.split(heading, 1)[1]]
        skipped = 0
        for nxt in cells[i + 1:]:
            if not isinstance(nxt, dict):
                break
            if nxt.get("cell_type") != "markdown":
                if skipped < 2 and _clean("\n".join(parts), prompt) is None:
                    skipped += 1  # a code cell between the heading and the answer written below it
                    continue
                break
            more = _source(nxt)
            if any(_HEADING.match(line) for line in more.splitlines()[:1]):
                break
            parts.append(more)
        # the question's own prompt (*In a few sentences: ...*) is the handout's, not the answer
        body = "\n".join(parts)
        if _PROMPT.search(body):
            body = body[_PROMPT.search(body).start():]
        answer = _clean(body, prompt)
        if answer:
            return answer
    return None


def _source(cell):
    src = cell.get("source", cell.get("input", ""))  # nbformat 3 code cells keep theirs in "input"
    return "".join(s for s in src if isinstance(s, str)) if isinstance(src, list) else str(src)


def answer_in_python(source, qid, prompt=None):
    """The answer to `qid` in Python source text: a string assigned to Q3_text (any case), or the
    comment lines after a comment naming the question. None when there is neither."""
    name = _names(qid)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        tree = None
    for node in getattr(tree, "body", []):
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
                and any(isinstance(t, ast.Name) and name.fullmatch(t.id) for t in node.targets)):
            answer = _clean(node.value.value, prompt)
            if answer:
                return answer
    lines = source.splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#") and name.search(line):
            # `# Q3-text: the answer starts on this line` (the label's line holds its first words)
            first = _label(line.lstrip().lstrip("#"), name)
            rest = [first.strip()] if first and first.strip() else []
            for nxt in lines[i + 1:]:
                if not nxt.lstrip().startswith("#"):
                    if rest or nxt.strip():
                        break
                    continue
                rest.append(nxt.lstrip()[1:].strip())
            answer = _clean("\n".join(rest), prompt)
            if answer:
                return answer
    return None


def _read(path):
    """The text of a regular file (no link followed, size capped), or None."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(_MAX_FILE + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > _MAX_FILE:
        return None
    return data.decode("utf-8-sig", errors="replace")


def _files(path):
    if not os.path.isdir(path):
        return [path]
    out = []
    for root, dirs, files in os.walk(path, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        out += [os.path.join(root, f) for f in sorted(files) if f.endswith(_SUFFIXES)]
        if len(out) >= _MAX_FILES:
            break
    return out[:_MAX_FILES]


def find_answers(path, prompts):
    """{qid: answer text or None} for a submission file or folder; `prompts` {qid: the handout's
    question text or None}."""
    prompts = {str(q): p for q, p in dict(prompts).items()}
    found = {q: None for q in prompts}
    if not found:
        return found
    for file in _files(os.fspath(path)):
        if os.path.islink(file) or not file.endswith(_SUFFIXES):
            continue
        text = _read(file)
        if text is None:
            continue
        for qid in [q for q, a in found.items() if a is None]:
            if file.endswith(".ipynb"):
                try:
                    found[qid] = answer_in_notebook(json.loads(text), qid, prompts[qid])
                except (ValueError, RecursionError):
                    pass
            elif file.endswith(".py"):
                found[qid] = answer_in_python(text, qid, prompts[qid])
            else:
                found[qid] = answer_in_python("\n".join("# " + line for line in text.splitlines()), qid,
                                              prompts[qid]) if _names(qid).search(text) else None
    return found
