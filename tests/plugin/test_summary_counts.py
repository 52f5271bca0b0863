"""The terminal summary counts every death and reset by reason, whatever caused it (issue #9
point 3): fault markers, host-harness kernels, restarts, exits; also merged across xdist workers.
Before, two SIGKILL markers that killed two kernels left the summary saying "deaths: none"."""

from __future__ import annotations

import pytest

TESTS = """
import pytest
from pytest_hermes_kernel import HostGoneError

@pytest.mark.hermes_kernel_sigkill(after_cell=1)
def test_sigkill_one(hermes_kernel):
    hermes_kernel.execute("x = 1")
    r = hermes_kernel.execute("x")
    assert r.kernel.state_lost and r.kernel.reason == "died"

@pytest.mark.hermes_kernel_sigkill(after_cell=1)
def test_sigkill_two(hermes_kernel):
    hermes_kernel.execute("x = 1")
    assert hermes_kernel.execute("1").kernel.reason == "died"

@pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.3)
def test_host_killed(hermes_kernel):
    hermes_kernel.execute("x = 1")
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("import time; time.sleep(30)")

def test_restart(hermes_kernel):
    hermes_kernel.execute("x = 1")
    hermes_kernel.restart()
    assert hermes_kernel.execute("1").kernel.reason == "reset"

def test_exit(hermes_kernel):
    r = hermes_kernel.execute("raise SystemExit(3)")
    assert r.status == "exited"
    hermes_kernel.execute("1")  # the echo of the exit on the next cell is not a second death
"""

EXPECTED = "*deaths and resets by reason: died=2, exited=1, host_gone=1, reset=1"


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_summary_counts_what_the_tests_observed(pytester: pytest.Pytester, run, xdist) -> None:  # type: ignore[no-untyped-def]
    pytester.makepyfile(test_deaths=TESTS)
    result = run("--hermes-transport=local", *xdist)
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines([EXPECTED])


def test_the_summary_starts_right_under_its_header_in_verbose_mode(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_one="def test_one(hermes_kernel):\n    assert hermes_kernel.execute('1').ok\n")

    result = run("-v")

    lines = result.outlines
    header = next(i for i, line in enumerate(lines) if "hermes-kernel summary" in line)
    assert lines[header + 1].startswith("kernels started: 1;"), lines[header - 2:header + 3]
