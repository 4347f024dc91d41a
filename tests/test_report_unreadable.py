"""`hwcheck report` on an OUT whose scorecards were damaged after grading (a TA's probe, h44).

A small class is graded for real (public mode), then one scorecard is cut short and another emptied: the
report names both, with the `grade --resume` that grades them again, on the terminal and in a banner at the
top of the page, says by how many students the page falls short, and exits 1 as `hwcheck export` does; the
manual.csv rows of those students are not called "no submission graded". An undamaged OUT still exits 0.
"""

import json
import os
import re
import shutil

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("copydetect")

from click.testing import CliRunner  # noqa: E402

from checker.cli import main  # noqa: E402
from checker.spec import example_dirs  # noqa: E402

EXAMPLES = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
CLASS = {"alice.py": "correct.py", "bob.py": "no_scaling.py", "carol.py": "correct.py"}

pytestmark = pytest.mark.slow


def _hwcheck(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("report_unreadable")
    subs = base / "subs"
    subs.mkdir()
    for name, src in CLASS.items():
        shutil.copyfile(os.path.join(EXAMPLES, src), subs / name)
    out = base / "out"
    result = _hwcheck("grade", str(subs), "-a", "attention", "-o", str(out), "--public")
    assert result.exit_code == 0, result.output
    return base, out


def _page(path):
    text = path.read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="hwcheck-data">(.*?)</script>', text,
                                re.DOTALL).group(1))
    return text, data


def test_an_undamaged_out_exits_0(graded):
    base, out = graded
    result = _hwcheck("report", str(out), "-o", str(base / "good.html"))
    assert result.exit_code == 0, result.output
    assert "3 submissions of attention" in result.output
    assert "cannot be read" not in result.output
    text, data = _page(base / "good.html")
    assert data["unreadable"] == [] and not data["incomplete"]
    assert 'class="banner"' not in text


def test_damaged_scorecards_are_named_with_their_repair(graded):
    base, good = graded
    out = base / "damaged"
    shutil.copytree(good, out)
    whole = (out / "bob.json").read_bytes()
    (out / "bob.json").write_bytes(whole[:500])  # cut short
    (out / "alice.json").write_bytes(b"")  # emptied
    manual = (out / "manual.csv").read_text(encoding="utf-8-sig")
    assert "alice," in manual and "bob," in manual  # the rows grade wrote for the manual question

    result = _hwcheck("report", str(out), "-o", str(base / "page.html"))
    assert result.exit_code == 1, result.output
    said = result.output
    assert "1 of 3 submissions of attention" in said
    assert "2 scorecards in" in said and "alice, bob" in said
    assert f"-o {out} --resume" in said
    assert "leaves out 2 of the 3 submissions" in said
    assert "was graded into this folder" not in said  # manual.csv's rows of alice and bob are no problem

    text, data = _page(base / "page.html")
    assert data["unreadable"] == ["alice", "bob"] and data["submissions"] == 1
    banner = re.search(r'<p class="banner" role="alert">(.*?)</p>', text, re.DOTALL)
    assert banner, "a banner says the page is short of students"
    assert text.index('class="banner"') < text.index('id="scores"')  # at the top, before any number
    assert "alice, bob" in banner.group(1) and "--resume" in banner.group(1)
    assert "leaves out 2 of the 3 submissions" in banner.group(1)
    assert "was graded into this folder" not in text
