"""Tests of checker.records.atomic: atomic text and JSON writes."""

import json
import os

import pytest

from checker.records import atomic
from checker.records.atomic import write_json_atomic, write_text_atomic


def test_write_text_creates_parents_and_replaces(tmp_path):
    path = tmp_path / "a" / "b" / "out.txt"
    write_text_atomic(path, "first\n")
    assert path.read_text() == "first\n"
    write_text_atomic(str(path), "second \u00e9\r\n")
    with open(path, "rb") as f:
        assert f.read() == "second \u00e9\r\n".encode("utf-8")
    assert os.listdir(path.parent) == ["out.txt"]


def test_write_json(tmp_path):
    path = tmp_path / "results.json"
    write_json_atomic(path, {"score": 1.5, "name": "Q1 \u203a test"})
    assert json.loads(path.read_text(encoding="utf-8")) == {"score": 1.5, "name": "Q1 \u203a test"}
    assert path.read_text(encoding="utf-8").endswith("\n")


def test_bad_json_leaves_old_file_and_no_temp(tmp_path):
    path = tmp_path / "results.json"
    write_json_atomic(path, {"ok": 1})
    with pytest.raises(ValueError):
        write_json_atomic(path, {"score": float("nan")})
    with pytest.raises(TypeError):
        write_json_atomic(path, {"x": object()})
    assert json.loads(path.read_text()) == {"ok": 1}
    assert os.listdir(tmp_path) == ["results.json"]


def test_failed_replace_cleans_up(tmp_path, monkeypatch):
    path = tmp_path / "out.txt"
    path.write_text("old")

    def boom(src, dst):
        raise OSError("disk on fire")

    monkeypatch.setattr(atomic.os, "replace", boom)
    with pytest.raises(OSError, match="disk on fire"):
        write_text_atomic(path, "new")
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_mode_is_kept_or_defaulted(tmp_path):
    new = tmp_path / "new.txt"
    write_text_atomic(new, "x")
    assert new.stat().st_mode & 0o777 == 0o644
    old = tmp_path / "old.txt"
    old.write_text("x")
    os.chmod(old, 0o600)
    write_text_atomic(old, "y")
    assert old.stat().st_mode & 0o777 == 0o600 and old.read_text() == "y"


def test_text_must_be_str(tmp_path):
    with pytest.raises(TypeError):
        write_text_atomic(tmp_path / "x", b"bytes")
    assert os.listdir(tmp_path) == []
