"""Under pytest-xdist the workers run the kernels and the controller prints one summary with
their counts added up."""

from __future__ import annotations

import pytest

pytest.importorskip("xdist")

KERNEL_TESTS = """
import pytest

@pytest.mark.parametrize("n", range(4))
def test_cell(hermes_kernel, n):
    assert hermes_kernel.execute(f"{n} * 2").value == str(n * 2)
"""


def test_workers_run_kernels_and_the_controller_sums_them(pytester, run):
    pytester.makepyfile(test_par=KERNEL_TESTS)

    result = run("-n", "2")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*= hermes-kernel summary =*", "kernels started: 4; *"])
    out = result.stdout.str()
    assert out.count("hermes-kernel summary") == 1
    assert "leaked" not in out  # workers do not report each other's kernel dirs
