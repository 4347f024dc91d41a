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

Student text is hostile input here, read by the trusted process: every pass
over it is linear and capped. The patterns never nest repeats over the same
characters (no backtracking blow-up), what follows a label is read up to
_REGION_LINES lines and _REGION_CHARS characters, a notebook heading's answer
up to _REGION_CELLS cells, and a `Q3_text = "..."` string is read with the
tokenizer from its own line, never by parsing the whole file (a line nested
200,000 deep cannot make the grader's parser fail). When a cap cuts something
off, or a file cannot be read (a notebook's JSON nested too deeply), a note
says so (`find_answers(..., notes=[])`): it costs the written answer, never the
grade.

What it is not: a grader (nobody scores the text here), and never a reader of
anything but the submission's own regular files: they are read as grading reads
them (`checker.running.safe_read`: a link is followed only to a regular file inside the
submission, no FIFO or device is opened), with a size cap, and only
.ipynb/.py/.md/.txt files are looked at, so a submission cannot make the
scorecard quote another file.
"""

import ast
import functools
import os
import re
import tokenize

from checker.walk import walk

__all__ = ["MAX_ANSWER", "find_answers", "answer_in_notebook", "answer_in_python"]

MAX_ANSWER = 4000  # characters kept of one answer
_MAX_READ = 64 * 1024 * 1024  # characters read over all the files of a folder submission
_MAX_FILES = 200
_REGION_LINES = 2000  # lines read after a label (blank ones included)
_REGION_CHARS = 4 * MAX_ANSWER  # characters read after a label
_REGION_CELLS = 12  # notebook cells read after a heading
_MAX_STRINGS = 20  # `Q3_text = ...` statements tried in one file
_MAX_TOKENS = 1000  # tokens of one such statement
_SUFFIXES = (".ipynb", ".py", ".md", ".txt")
# Linear patterns: no two adjacent repeats can match the same characters (so no backtracking blow-up)
_PROMPT = re.compile(r"^[ \t]*(?:(?:\*\*|__)[ \t]*)?(?:your|my) answer\b[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*:?\s*",
                     re.IGNORECASE | re.MULTILINE)
_PLACEHOLDER = re.compile(r"^\(?[ \t]*replace this (?:line|text)[^)\n]*(?:\)[ \t]*)?$|^\.\.\.$|^TODO\.?$",
                          re.IGNORECASE)
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]")
_LEAD = re.compile(r"\s*(?:[-*]\s+)?(\*\*|__)?\s*")  # matched greedily to the end: no backtracking
_TAIL = re.compile(r"\s*(?:\([^)]*\))?\s*:?\s*(\*\*|__)?\s*:?")
_ASSIGNED = re.compile(r"^[A-Za-z_]\w*[ \t]*=(?!=)", re.MULTILINE)  # a top-level assignment's first line


def _names(qid):
    """How the question is written in a heading or a variable: Q3-text, Q3 text, Q3_text."""
    parts = [re.escape(p) for p in re.split(r"[-_ ]+", str(qid)) if p]
    # "Q3-text", "Q3 text", "Q3_text", "Q3 - text", "Q3 – text", "Q3: text"
    return re.compile(r"(?<![\w-])" + r"(?:\s*[-_:\u2013\u2014])?\s*".join(parts) + r"(?![\w-])", re.IGNORECASE)


def _label(line, name):
    """The rest of a line that starts by naming the question in bold or with a colon
    (`**Q3-text:** my answer`, `Q3-text: my answer`), or None."""
    m = _LEAD.match(line)
    rest = line[m.end():]
    found = name.match(rest)
    if not found:
        return None
    after = rest[found.end():]
    tail = _TAIL.match(after)
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


class _Region:
    """The text read after a label, up to _REGION_LINES lines and _REGION_CHARS characters."""

    def __init__(self):
        self.parts, self.lines, self.chars, self.cut = [], 0, 0, False

    def add(self, text):
        """Add text (one line or a cell); False once the caps are reached (the rest is not read)."""
        if self.cut:
            return False
        lines = text.count("\n") + 1
        if self.lines + lines > _REGION_LINES or self.chars + len(text) > _REGION_CHARS:
            room = min(_REGION_CHARS - self.chars, len(text))
            kept = "\n".join(text[:max(room, 0)].split("\n")[:max(_REGION_LINES - self.lines, 0)])
            self.parts.append(kept)
            self.cut = True
            return False
        self.parts.append(text)
        self.lines += lines
        self.chars += len(text) + 1
        return True

    def text(self):
        return "\n".join(self.parts)


def _note_cut(notes, qid, where, answer):
    if notes is not None and (answer is None or len(answer) < MAX_ANSWER):
        notes.append(f"Written answer {qid}: only the first {_REGION_LINES} lines ({_REGION_CHARS} characters) "
                     f"after its label in {where} were read" + ("" if answer else "; no answer was found in them")
                     + ".")


def answer_in_notebook(nb, qid, prompt=None, notes=None, where="the notebook"):
    """The answer to `qid` in a parsed notebook dict, or None (`prompt`: the handout's question, not an
    answer). `notes`: a list that is told what a cap cut off."""
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if cells is None and isinstance(nb, dict) and isinstance(nb.get("worksheets"), list):  # nbformat 3
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict) and isinstance(ws.get("cells"), list)
                 for c in ws["cells"]]
    if not isinstance(cells, list):
        return None
    name = _names(qid)
    kinds = [cell.get("cell_type") if isinstance(cell, dict) else None for cell in cells]
    texts = [_source(cell) if kind in ("code", "markdown") else "" for cell, kind in zip(cells, kinds)]
    for i, (kind, text) in enumerate(zip(kinds, texts)):
        if kind == "code":
            answer = answer_in_python(text, qid, prompt, notes, where)  # `# Q3-text` comments in a code cell
            if answer:
                return answer
        if kind != "markdown":
            continue
        heading = next((line for line in text.splitlines() if _HEADING.match(line) and name.search(line)), None)
        label = None
        if heading is None:
            heading = next((line for line in text.splitlines()
                            if name.search(line) and _label(line, name) is not None), None)
            if heading is None:
                continue
            label = _label(heading, name)
        region = _Region()
        region.add((label or "") + text.split(heading, 1)[1])
        skipped = 0
        for j in range(i + 1, min(len(cells), i + 1 + _REGION_CELLS)):
            if kinds[j] is None:
                break
            if kinds[j] != "markdown":
                if skipped < 2 and _clean(region.text(), prompt) is None:
                    skipped += 1  # a code cell between the heading and the answer written below it
                    continue
                break
            if _HEADING.match(texts[j].split("\n", 1)[0]):
                break
            if not region.add(texts[j]):
                break
        # the question's own prompt (*In a few sentences: ...*) is the handout's, not the answer
        body = region.text()
        asked = _PROMPT.search(body)
        if asked:
            body = body[asked.start():]
        answer = _clean(body, prompt)
        if region.cut:
            _note_cut(notes, qid, where, answer)
        if answer:
            return answer
    return None


def _source(cell):
    src = cell.get("source", cell.get("input", ""))  # nbformat 3 code cells keep theirs in "input"
    return "".join(s for s in src if isinstance(s, str)) if isinstance(src, list) else str(src)


def _assigned_string(lines, start, name):
    """The string of the top-level statement `Q3_text = "..."` (or `a = Q3_text = ("..." "...")`) that
    begins at lines[start], when a target is `name`; else None. Read with the tokenizer from that line
    only, at most _REGION_LINES lines, _REGION_CHARS characters and _MAX_TOKENS tokens."""
    def read():
        size = 0
        for line in lines[start:start + _REGION_LINES]:
            size += len(line)
            if size > _REGION_CHARS:
                return
            yield line
    targets, strings, want = [], [], "target"
    try:
        for n, tok in enumerate(tokenize.generate_tokens(functools.partial(next, read(), ""))):
            if n > _MAX_TOKENS:
                return None
            if tok.type in (tokenize.NL, tokenize.COMMENT):
                continue
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                break
            if want == "target" and tok.type == tokenize.NAME:
                targets.append(tok.string)
                want = "="
            elif want == "=" and tok.type == tokenize.OP and tok.string == "=":
                want = "value"
            elif want == "value" and tok.type == tokenize.NAME and not strings:
                targets.append(tok.string)  # a chained assignment: another target
                want = "="
            elif want == "value" and (tok.type == tokenize.STRING or tok.string in "()"):
                strings.append(tok.string)
            else:
                return None
    except (tokenize.TokenError, SyntaxError):
        return None
    if not strings or not any(name.fullmatch(t) for t in targets):
        return None
    try:
        value = ast.literal_eval("(" + "\n".join(strings) + ")")
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, str) else None


def answer_in_python(source, qid, prompt=None, notes=None, where="the file"):
    """The answer to `qid` in Python source text: a string assigned to Q3_text (any case), or the
    comment lines after a comment naming the question. None when there is neither. `notes`: a list
    that is told what a cap cut off."""
    name = _names(qid)
    lines = source.splitlines(True)
    starts = {}  # character offset of each line -> its index, filled only as far as needed
    tried = 0
    for m in _ASSIGNED.finditer(source):
        end = source.find("\n", m.start())
        if not name.search(source, m.start(), m.end() if end < 0 else end):
            continue
        tried += 1
        if tried > _MAX_STRINGS:
            break
        if not starts:
            offset = 0
            for k, line in enumerate(lines):
                starts[offset] = k
                offset += len(line)
        if m.start() in starts:
            value = _assigned_string(lines, starts[m.start()], name)
            answer = _clean(value, prompt) if value is not None else None
            if answer:
                return answer
    lines = source.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not (line.lstrip().startswith("#") and name.search(line)):
            continue
        # `# Q3-text: the answer starts on this line` (the label's line holds its first words)
        first = _label(line.lstrip().lstrip("#"), name)
        region = _Region()
        has_text = bool(first and first.strip())
        if has_text:
            region.add(first.strip())
        while i < len(lines):
            nxt = lines[i]
            if not nxt.lstrip().startswith("#"):
                if has_text or nxt.strip():
                    break
                i += 1
                continue
            if not region.add(nxt.lstrip()[1:].strip()):
                break
            has_text = True
            i += 1
        # the next label is looked for after this one's text: every line is read once
        answer = _clean(region.text(), prompt)
        if region.cut:
            _note_cut(notes, qid, where, answer)
            i += 1
            while i < len(lines) and lines[i].lstrip().startswith("#"):
                i += 1  # the rest of a comment block too long to read is not read for another label
        if answer:
            return answer
    return _answer_in_a_string(source, name, prompt)


_BARE_STRING = re.compile(r'^[rRuU]?("""|\'\'\')(.*?)\1', re.DOTALL | re.MULTILINE)


def _answer_in_a_string(source, name, prompt):
    '''The answer in a string of its own at the start of a line that begins by naming the question
    (a triple-quoted `Q3-text: my answer ...`, the answer written as a docstring), or None.'''
    for k, m in enumerate(_BARE_STRING.finditer(source)):
        if k >= _MAX_STRINGS:
            break
        body = m.group(2).strip()
        if not body or not name.match(body):
            continue
        first, _, rest = body.partition("\n")
        head = _label(first, name)
        text = ((head or "").strip() + "\n" + rest).strip() if head is not None else rest.strip()
        answer = _clean(text[:MAX_ANSWER * 2], prompt)
        if answer:
            return answer
    return None


def _read(path, root):
    """(the text of a submission's file by grading's rules, checker.running.safe_read: a regular file inside the
    submission `root`, no link out of it, no FIFO or device, size capped; or None, and why not)."""
    from checker.running.safe_read import Refused, read_bytes
    try:
        return read_bytes(path, root).decode("utf-8-sig", errors="replace"), ""
    except Refused as e:
        return None, getattr(e, "why", "") or str(e)


def _files(path):
    if not os.path.isdir(path):
        return [path]
    out = []
    for root, dirs, files in walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        out += [os.path.join(root, f) for f in sorted(files) if f.endswith(_SUFFIXES)]
        if len(out) >= _MAX_FILES:
            break
    return out[:_MAX_FILES]


def find_answers(path, prompts, notes=None):
    """{qid: answer text or None} for a submission file or folder; `prompts` {qid: the handout's
    question text or None}. `notes`: a list told, in words for the scorecard, what was not read
    (a cap reached, a notebook nested too deeply to read)."""
    prompts = {str(q): p for q, p in dict(prompts).items()}
    found = {q: None for q in prompts}
    if not found:
        return found
    total = 0
    # a single file is read as a file of its folder: the runner gives the file a link leads to (file_source),
    # and a link handed here is not followed out of its folder
    root = os.fspath(path) if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    for file in _files(os.fspath(path)):
        if not file.endswith(_SUFFIXES):
            continue
        wanted = [q for q, a in found.items() if a is None]
        if not wanted:
            break
        text, why = _read(file, root)
        shown = os.path.basename(file)
        if text is None:
            if notes is not None and why:  # not "no answer was found": it was not read
                notes.append(f"Written answers ({', '.join(wanted)}): {shown} was not read for them: {why}.")
            continue
        total += len(text)
        if total > _MAX_READ:
            if notes is not None:
                notes.append(f"Written answers ({', '.join(wanted)}): {shown} and the files after it were not "
                             f"read for them (a submission's files are read up to {_MAX_READ // 2**20} MiB).")
            break
        nb = None
        if file.endswith(".ipynb"):
            from checker.worker.sources import NotebookError, notebook_json
            try:  # parsed as the loader parses it, within its bounds (a file built to be costly is not parsed)
                nb = notebook_json(text)
            except NotebookError as e:
                if notes is not None and ("nested too deeply" in str(e) or "values" in str(e)):
                    notes.append(f"Written answers ({', '.join(wanted)}): {shown} was not read for them: "
                                 f"{str(e).split(';')[0]}.")
                continue  # not a notebook, or not read: the load messages say so
        for qid in wanted:
            try:
                if nb is not None:
                    found[qid] = answer_in_notebook(nb, qid, prompts[qid], notes, shown)
                elif file.endswith(".py"):
                    found[qid] = answer_in_python(text, qid, prompts[qid], notes, shown)
                elif _names(qid).search(text):
                    found[qid] = answer_in_python("\n".join("# " + line for line in text.splitlines()), qid,
                                                  prompts[qid], notes, shown)
            except (RecursionError, MemoryError) as e:  # never the grade: only this answer is lost
                if notes is not None:
                    notes.append(f"Written answer {qid}: {shown} could not be read for it "
                                 f"({type(e).__name__}).")
    return found
