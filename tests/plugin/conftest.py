"""The plugin tests' own fixtures: each test writes a small test suite and runs pytest on it in a
subprocess (``pytester.runpytest_subprocess``), then asserts what a user of the plugin sees:
outcomes, the report header, the summary, warnings and error messages, and processes gone.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_hermes_kernel.plugin.settings import SETTINGS
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, assert_run_left_nothing, own_run_id


@pytest.fixture(autouse=True)
def _no_hermes_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner run inherits our environment: start it without any ``PYTEST_HERMES_*`` setting."""
    for setting in SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)


@pytest.fixture
def run(pytester: pytest.Pytester) -> Callable[..., pytest.RunResult]:
    """``run(*args) -> RunResult``: pytest in a subprocess, in the pytester dir, without the cache.

    The run has a run id of its own (``--hermes-run-id``, unless ``args`` name one), and the test
    fails when the run left a container or run directory of that id behind (see
    :func:`~tests.support.run_leftovers`): a run's containers outlived it, unseen, when a
    registry closed at interpreter exit started a new sshd container after the plugin had
    closed the run's transports.
    """

    def run_pytest(*args: str) -> pytest.RunResult:
        run_id, own = own_run_id(args)
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *UNRELATED_PLUGINS, *own, *args,
                                               timeout=RUN_TIMEOUT_S)
        assert_run_left_nothing(run_id, result)
        return result

    return run_pytest
