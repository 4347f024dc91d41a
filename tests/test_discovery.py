"""Where hwcheck finds assignments (checker.spec, issue 29): its own folder, HWCHECK_ASSIGNMENTS, and the
`hwcheck.assignments` entry points of installed packages; what it says about a name it cannot use; a
folder's own reference.py; and that every one found is a secret tree for the workers."""

import importlib
import os
import textwrap

import pytest

from checker import spec as S
from checker.running.submission_files import secret_paths

SPEC = 'id = "{aid}"\ntitle = "t"\n[[questions]]\nid = "Q1"\ntitle = "q"\npoints = 5\nnames = ["f"]\n'


def _assignment(folder, reference=True):
    folder.mkdir(parents=True)
    (folder / "spec.toml").write_text(SPEC.format(aid=folder.name))
    if reference:
        (folder / "reference.py").write_text("def f():\n    return 42\n")
    return folder


@pytest.fixture
def clean(monkeypatch):
    monkeypatch.delenv(S.ENV_VAR, raising=False)
    S._entry_point_folders.cache_clear()
    yield monkeypatch
    S._entry_point_folders.cache_clear()


def test_built_in_assignments_are_the_folders_with_a_spec(clean):
    found = S.assignment_dirs()
    builtin = sorted(d for d in os.listdir(S.ASSIGNMENTS_DIR) if os.path.isfile(os.path.join(S.ASSIGNMENTS_DIR, d, "spec.toml")))
    assert sorted(found) == builtin and all(S.is_builtin(a) for a in found)
    assert S.discovery_problems() == []


def test_hwcheck_assignments_names_folders_and_folders_of_them(clean, tmp_path):
    one = _assignment(tmp_path / "a" / "hw1")
    _assignment(tmp_path / "many" / "hw2")
    _assignment(tmp_path / "many" / "hw3", reference=False)
    (tmp_path / "many" / "notes").mkdir()
    clean.setenv(S.ENV_VAR, os.pathsep.join([str(one), str(tmp_path / "many"), str(tmp_path / "nothing")]))
    found = S.assignment_dirs()
    assert {k: found[k] for k in ("hw1", "hw2", "hw3")} == {
        "hw1": str(one), "hw2": str(tmp_path / "many" / "hw2"), "hw3": str(tmp_path / "many" / "hw3")}
    assert not S.is_builtin("hw1")
    assert [p for p in S.discovery_problems() if "nothing" in p]
    # a folder's own reference.py is the assignment's reference, importable by a name of its own
    spec = S.load_spec("hw1")
    assert spec["reference"] == "hwcheck_reference.hw1" and S.reference_file(spec) == str(one / "reference.py")
    assert importlib.import_module("hwcheck_reference.hw1").f() == 42
    assert S.load_spec("hw3")["reference"] == "hwcheck_reference.hw3" and S.reference_file(S.load_spec("hw3")) is None
    # every one is secret, with its reference
    secrets = secret_paths()
    assert os.path.realpath(one) in secrets and os.path.realpath(tmp_path / "many" / "hw2") in secrets


def test_a_course_folder_cannot_take_a_built_in_id_and_a_spec_must_name_its_folder(clean, tmp_path):
    _assignment(tmp_path / "attention")
    wrong = tmp_path / "x" / "hw5"
    wrong.mkdir(parents=True)
    (wrong / "spec.toml").write_text(SPEC.format(aid="hw6"))
    clean.setenv(S.ENV_VAR, os.pathsep.join([str(tmp_path), str(tmp_path / "x")]))
    with pytest.raises(S.SpecError, match="the assignment id 'attention' is ambiguous"):  # neither is used
        S.assignment_dir("attention")
    assert any("has the id 'attention' of " + os.path.join(S.ASSIGNMENTS_DIR, "attention") in p
               for p in S.discovery_problems())
    with pytest.raises(S.SpecError, match="id = 'hw6', but its folder is named 'hw5'"):
        S.load_spec("hw5")


def test_an_installed_packages_entry_point_names_its_assignment_folder(clean, tmp_path):
    site = tmp_path / "site"
    _assignment(site / "mycourse" / "hw9")
    (site / "mycourse" / "__init__.py").write_text("")
    (site / "mycourse" / "hw9" / "__init__.py").write_text("")
    dist = site / "mycourse-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mycourse\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(textwrap.dedent("""\
        [hwcheck.assignments]
        hw9 = mycourse.hw9
        broken = mycourse.nowhere
    """))
    clean.syspath_prepend(str(site))
    S._entry_point_folders.cache_clear()
    assert S.assignment_dir("hw9") == str(site / "mycourse" / "hw9")
    assert any("broken = mycourse.nowhere" in p for p in S.discovery_problems())
    assert os.path.realpath(site / "mycourse" / "hw9") in secret_paths()


def test_the_cli_takes_an_assignment_found_when_it_runs(clean, tmp_path):
    from click.testing import CliRunner

    from checker.cli import main
    _assignment(tmp_path / "hw7")
    r = CliRunner().invoke(main, ["list"], env={S.ENV_VAR: str(tmp_path)})
    assert "hw7  t  (5 points)" in r.output
    r = CliRunner().invoke(main, ["check", "-a", "hw8", str(tmp_path / "hw7" / "reference.py")],
                           env={S.ENV_VAR: str(tmp_path)})
    assert r.exit_code == 2 and "'hw8' is not one of" in r.output and "'hw7'" in r.output


def test_validate_tells_a_folder_named_but_not_used(clean, tmp_path):
    from click.testing import CliRunner

    from checker.cli import main
    # the message comes before any check runs: the slow ones (the kit's probe, grading) add nothing here
    r = CliRunner().invoke(main, ["validate", "attention", "--skip", "kit", "--skip", "reference", "--skip", "examples"],
                           env={S.ENV_VAR: str(tmp_path / "typo")})
    assert r.exit_code == 1, r.output
    assert f"{S.ENV_VAR} names {tmp_path / 'typo'}, which holds no spec.toml" in r.output
    assert "attention: spec: ok" in r.output


def test_check_announces_only_hidden_tests_that_exist(clean, tmp_path):
    """A spec naming hidden tests that the test file does not (yet) have: `check` announced '+ 2 hidden
    tests' for them; it counts the hidden test items pytest really set aside."""
    from click.testing import CliRunner

    from checker.cli import main
    tests = textwrap.dedent('''\
        import pytest

        @pytest.mark.question("Q1")
        def test_f(sub, ref):
            assert sub.call("f") == ref.f()
    ''')
    random = textwrap.dedent('''

        @pytest.mark.question("Q1")
        @pytest.mark.parametrize("k", [1, 2, 3])
        def test_f_random(sub, ref, k):
            assert sub.call("f") == ref.f()
    ''')
    work = tmp_path / "work"
    work.mkdir()
    (work / "mine.py").write_text("def f():\n    return 42\n")
    for aid, source, said in (("hw4", tests, None), ("hw5", tests + random, "+ 3 hidden tests run at grading time")):
        hw = _assignment(tmp_path / aid)
        (hw / "spec.toml").write_text(SPEC.format(aid=aid) + 'hidden_tests = ["test_f_later", "test_f_random"]\n')
        (hw / f"test_{aid}.py").write_text(source)
        r = CliRunner().invoke(main, ["check", "-a", aid, str(work / "mine.py")], env={S.ENV_VAR: str(tmp_path)})
        assert r.exit_code == 0, r.output
        if said is None:  # neither hidden test exists yet
            assert "hidden" not in r.output, r.output
        else:  # test_f_random's 3 items; test_f_later does not exist
            assert said in r.output, r.output


def test_the_kit_is_not_built_over_a_spec_whose_hidden_test_name_is_a_typo(clean, tmp_path):
    """A typo in hidden_tests made the hidden test public, and `hwcheck kit` shipped it saying 'no hidden
    tests': the kit now refuses, naming the problem, and writes nothing."""
    from click.testing import CliRunner

    from checker.cli import main
    hw = _assignment(tmp_path / "course" / "hw3")
    (hw / "spec.toml").write_text(SPEC.format(aid="hw3") + 'hidden_tests = ["test_f_randon"]\n')
    (hw / "test_hw3.py").write_text('import pytest\n\n\n@pytest.mark.question("Q1")\ndef test_f_random(sub, ref):\n'
                                    '    assert sub.call("f") == ref.f()\n')
    r = CliRunner().invoke(main, ["kit", "-o", str(tmp_path / "kit")], env={S.ENV_VAR: str(tmp_path / "course")})
    assert r.exit_code == 2, r.output
    assert "no kit written: hw3: question Q1: hidden_tests names 'test_f_randon', which is no test function" in r.output
    assert not (tmp_path / "kit").exists()
