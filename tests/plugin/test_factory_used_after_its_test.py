"""``hermes_kernel_factory`` called after its test ended (kept in a global, a thread that outlived
the test) raises ``KernelShutdownError`` naming the test, and starts nothing.

It started a kernel on the ended test's transport that no teardown would ever shut down: the
kernel leaked (the leak check of the test that called it reported it, the kernel ran on), while
``hermes_registry`` in the same spot already refused (``the kernel registry is shut down``).
"""

from __future__ import annotations

INNER = """
import pytest
from pytest_hermes_kernel import KernelShutdownError

saved = {}

def test_one(hermes_kernel_factory):
    saved["factory"] = hermes_kernel_factory
    assert hermes_kernel_factory().execute("1").value == "1"

def test_two():
    with pytest.raises(KernelShutdownError, match="test_one.*hermes_kernel_factory.*after that test ended"):
        saved["factory"]()
"""


def test_a_factory_used_after_its_test_refuses_and_leaves_nothing(pytester, run):
    pytester.makepyfile(test_inner=INNER)

    result = run("-v", "-W", "error::pytest_hermes_kernel.errors.HermesLeakWarning")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["kernels started: 1;*"])
    assert "leaked" not in result.stdout.str() and "outlived the test" not in result.stdout.str()
