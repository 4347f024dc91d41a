"""Shared fixtures for hwcheck's own tests: one warm grader per session and mode."""
import pytest

from checker.runner import Grader


@pytest.fixture(scope="session")
def grader():
    with Grader(mode="public") as g:
        yield g


@pytest.fixture(scope="session")
def hidden_grader():
    with Grader(mode="hidden", seed=20261122) as g:
        yield g
