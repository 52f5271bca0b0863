"""The plugin tests' own fixtures: each test writes a small test suite and runs pytest on it in a
subprocess (``pytester.runpytest_subprocess``), then asserts what a user of the plugin sees:
outcomes, the report header, the summary, warnings and error messages, and processes gone.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_hermes_kernel.plugin.settings import SETTINGS
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS


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
