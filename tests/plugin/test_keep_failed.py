"""--hermes-keep-failed: a failed test's kernel stays up for post-mortem until the session ends."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import gone, wait_until

KEEP_TESTS = """
from pathlib import Path

import psutil

PID_FILE = Path("kernel.pid")

def test_fails(hermes_kernel):
    hermes_kernel.execute("evidence = 'what went wrong'")
    PID_FILE.write_text(str(hermes_kernel.pid))
    assert False, "deliberate failure"

def test_later_in_the_same_session():
    worker = psutil.Process(int(PID_FILE.read_text()))  # raises NoSuchProcess if it was shut down
    assert worker.status() != psutil.STATUS_ZOMBIE
"""


def test_failed_tests_kernel_is_kept_until_the_session_ends(pytester, run):
    pytester.makepyfile(test_keep=KEEP_TESTS)

    result = run("--hermes-keep-failed")

    result.assert_outcomes(failed=1, passed=1)
    pid = int(Path(pytester.path, "kernel.pid").read_text())
    result.stdout.fnmatch_lines([
        "hermes-kernel: transports=local * keep-failed",
        f"kept for post-mortem: test_keep.py::test_fails[[]local[]]: kernel * worker pid {pid} runner pid * "
        "(shut down at session end)",
    ])
    assert "leaked" not in result.stdout.str()  # a kept kernel is not a leak
    wait_until(lambda: gone(pid), 5.0, what=f"kept kernel worker {pid} to end with the session")


def test_without_the_flag_a_failed_tests_kernel_is_shut_down(pytester, run):
    pytester.makepyfile(test_keep=KEEP_TESTS)

    result = run()

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["FAILED test_keep.py::test_later_in_the_same_session - psutil.NoSuchProcess*"])
    assert "kept for post-mortem" not in result.stdout.str()


def test_under_xdist_the_controller_lists_kernels_kept_by_workers(pytester, run):
    pytest.importorskip("xdist")
    pytester.makepyfile(test_keep=KEEP_TESTS)

    result = run("-n", "1", "--hermes-keep-failed")

    result.assert_outcomes(failed=1, passed=1)
    pid = int(Path(pytester.path, "kernel.pid").read_text())
    result.stdout.fnmatch_lines([f"kept for post-mortem: test_keep.py::test_fails[[]local[]]: kernel * worker pid {pid} *"])
    wait_until(lambda: gone(pid), 5.0, what=f"kept kernel worker {pid} to end with the session")
