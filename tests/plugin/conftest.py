"""Helpers for the plugin tests: each test writes a small test suite and runs pytest on it in a
subprocess (``pytester.runpytest_subprocess``), then asserts what a user of the plugin sees:
outcomes, the report header, the summary, warnings and error messages, and processes gone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from pytest_hermes_kernel.plugin.settings import SETTINGS

RUN_TIMEOUT_S = 90.0
"""Longest one inner pytest run may take before pytester kills it (a hang, not slowness)."""

UNRELATED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:benchmark")
"""Third-party plugins installed here that the inner runs do not need. Under
PYTHONDONTWRITEBYTECODE pytest re-rewrites hypothesis at every start (about 3 s a run)."""


@pytest.fixture(autouse=True)
def _no_hermes_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner run inherits our environment: start it without any ``PYTEST_HERMES_*`` setting."""
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)


@pytest.fixture
def run(pytester: pytest.Pytester) -> Callable[..., pytest.RunResult]:
    """``run(*args) -> RunResult``: pytest in a subprocess, in the pytester dir, without the cache."""

    def run_pytest(*args: str) -> pytest.RunResult:
        return pytester.runpytest_subprocess("-p", "no:cacheprovider", *UNRELATED_PLUGINS, *args,
                                             timeout=RUN_TIMEOUT_S)

    return run_pytest


def output_of(result: pytest.RunResult) -> str:
    """stdout and stderr of a run as one text."""
    return result.stdout.str() + "\n" + result.stderr.str()


def pid_in(text: str, pattern: str) -> int:
    """The first ``(\\d+)`` group of ``pattern`` in ``text``; fails the test if absent."""
    found = re.search(pattern, text)
    assert found, f"no match for {pattern!r} in:\n{text}"
    return int(found.group(1))
