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


OWN_KERNELS = """
import pytest
from pytest_hermes_kernel import KernelKey, KernelRegistry, start_kernel


@pytest.fixture
def own_registry():
    with KernelRegistry() as registry:
        yield registry


def test_a_registry_of_its_own(own_registry):
    assert own_registry.execute(KernelKey(owner="a"), "1 + 1").value == "2"
    assert own_registry.execute(KernelKey(owner="b"), "2 + 2").value == "4"


def test_start_kernel_of_its_own():
    with start_kernel() as kernel:
        kernel.restart()  # a new generation, not a new kernel
        assert kernel.execute("3").value == "3"


LEFT = []


def test_leaks_a_kernel_of_its_own():
    LEFT.append(start_kernel())  # never shut down: the leak check reports it and ends it
    assert LEFT[0].execute("4").value == "4"


def test_a_fixture_kernel(hermes_kernel):
    assert hermes_kernel.execute("5").value == "5"
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_kernels_a_test_starts_itself_are_counted_as_started(pytester: pytest.Pytester, run, xdist) -> None:  # type: ignore[no-untyped-def]
    """``kernels started`` counted only the ``hermes_*`` fixtures' kernels: a test's own
    ``KernelRegistry`` or ``start_kernel()`` left it at 1 here, beside a leak of one of those."""
    pytester.makepyfile(test_own=OWN_KERNELS)

    result = run("--hermes-transport=local", *xdist)

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*= hermes-kernel summary =*", "kernels started: 5; peak alive: *",
                                 "leaks found: *kernel process=*"])
    if not xdist:  # the registry's two kernels at once; xdist adds up its workers' peaks
        result.stdout.fnmatch_lines(["kernels started: 5; peak alive: 2; *"])


UNCONFIRMED = """
def _goes_silent(monkeypatch, kernel):
    # the host cannot see the runner end, nor confirm a kill (a paused container, a silent ssh host)
    for name, answer in (("reap", lambda launched, timeout: False), ("seen_gone", lambda launched: False),
                         ("kill", lambda launched: False)):
        monkeypatch.setattr(kernel.transport, name, answer)


def test_one(monkeypatch, hermes_kernel):
    hermes_kernel.execute("x = 1")
    _goes_silent(monkeypatch, hermes_kernel)


def test_two(monkeypatch, hermes_kernel):
    hermes_kernel.execute("x = 2")
    _goes_silent(monkeypatch, hermes_kernel)


def test_confirmed(hermes_kernel):
    hermes_kernel.execute("x = 3")
"""


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_the_summary_names_the_kernels_whose_shutdown_was_not_confirmed(pytester: pytest.Pytester, run, xdist) -> None:  # type: ignore[no-untyped-def]
    """A fixture kernel whose shutdown was not confirmed may still run: the summary said nothing."""
    pytester.makepyfile(test_unconfirmed=UNCONFIRMED)

    result = run("--hermes-transport=local", *xdist)

    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["kernels started: 3; *",
                                 "shutdowns not confirmed: 2 kernels (*, *): not seen gone (a paused or unreachable "
                                 "host): may still run until the orphan timer ends it"])


CRASH_AFTER_A_LEAK = """
import os

def test_leaks(hermes_kernel_factory):
    k = hermes_kernel_factory()
    k.execute("import subprocess; subprocess.Popen(['sleep', '30'], start_new_session=True)")

def test_crashes():
    os._exit(1)

def test_after(hermes_kernel):
    assert hermes_kernel.execute("1").ok
"""


def test_under_xdist_the_summary_still_counts_what_a_worker_saw_before_it_crashed(pytester: pytest.Pytester,
                                                                                   run) -> None:  # type: ignore[no-untyped-def]
    # a worker sent its counts only at its session end: one that crashed took them along, and the
    # summary said one kernel started and no leak where its tests had reported one
    pytest.importorskip("xdist")
    pytester.makepyfile(test_crash=CRASH_AFTER_A_LEAK)

    result = run("-n", "1", "--hermes-leak-grace=0.5")

    result.assert_outcomes(passed=2, failed=1, warnings=1)
    result.stdout.fnmatch_lines(["kernels started: 2; *", "leaks found: kernel process=1"])
