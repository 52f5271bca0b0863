"""Bug: after a test that ran pytest in this process (``pytester.runpytest`` inline, how a plugin's
own tests run it), a SIGTERM (a CI job cancelled) no longer stopped the run: the inner session's
end swapped the outer run's SIGTERM handler for the one meant for the outer run's own end, so the
SIGTERM became a ``SystemExit(143)`` inside the running test, which pytest reports as that test's
failure, and the run went on with its later tests (1 failed, 2 passed, exit status 1; a second
SIGTERM then killed it with no teardown). Now only the run that installed the handler swaps it at
its session's end: the SIGTERM interrupts the run, its teardown runs, the later tests do not.
"""

from __future__ import annotations

import pytest

SUITE = """
import os
import signal

import pytest

pytest_plugins = ["pytester"]


def test_an_inner_run(pytester):
    pytester.makepyfile(test_inner="def test_x():\\n    pass\\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


@pytest.fixture
def torn_down():
    yield
    print("TORN-DOWN-AFTER-SIGTERM")


def test_cancelled(torn_down):
    signal.raise_signal(signal.SIGTERM)  # the CI's cancel, in a later test


def test_never_reached():
    pass
"""


def test_a_sigterm_after_an_in_process_pytester_run_still_interrupts_the_run(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = run("--hermes-leak-check=off", "-s")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert "SIGTERM: the run is torn down like after Ctrl-C" in out, out
    assert "TORN-DOWN-AFTER-SIGTERM" in out, out
    assert "test_never_reached" not in out.replace("test_suite.py::test_never_reached", ""), out
    assert "SystemExit" not in out, out
