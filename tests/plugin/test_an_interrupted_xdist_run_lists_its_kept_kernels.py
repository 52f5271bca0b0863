"""Bug: a pytest-xdist run interrupted (Ctrl-C, SIGTERM to the controller) after a worker had kept
a failed test's kernel (``--hermes-keep-failed``) printed no "kept for post-mortem" line and no
hermes-kernel summary at all, though the kernel ran on for the TTL (on docker with its container).

The controller adds each worker's counts when xdist reports the worker down; an interrupted
controller no longer runs the loop that reports it, so nothing was added. The counts each worker's
last teardown report carried are now added at the summary for the workers never reported down.
"""

from __future__ import annotations

import pytest

from tests.plugin.test_keep_failed import hermes, kept_env, records  # noqa: F401

TESTS = """
import os, signal, time

def test_fails(hermes_kernel):
    hermes_kernel.execute("evidence = 'what went wrong'")
    assert False, "deliberate failure"

def test_then_the_run_is_cancelled(hermes_kernel):
    os.kill(os.getppid(), signal.SIGTERM)  # the CI cancels the run: SIGTERM to the xdist controller
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.05)
"""


def test_an_interrupted_xdist_run_lists_the_kernel_a_worker_kept(pytester: pytest.Pytester, run,
                                                                   kept_env) -> None:  # noqa: F811
    pytester.makepyfile(test_keep=TESTS)
    result = run("-n", "2", "--dist=loadfile", "--hermes-keep-failed", "--hermes-transport=local")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out
    assert len(records(kept_env)) == 1, out
    result.stdout.fnmatch_lines([f"kept for post-mortem: test_keep.py::test_fails[[]local[]]: kernel {records(kept_env)[0]} *"])
