"""Under pytest-xdist the workers run the kernels and the controller prints one summary with
their counts added up; a worker's leak check never blames another worker's kernels."""

from __future__ import annotations

import pytest

pytest.importorskip("xdist")

KERNEL_TESTS = """
import pytest

@pytest.mark.parametrize("n", range(4))
def test_cell(hermes_kernel, n):
    assert hermes_kernel.execute(f"{n} * 2").value == str(n * 2)
"""

# Two files, one per worker (--dist loadfile), in lock step through files in the run's dir:
# the holder starts its kernel after test_short's leak snapshot and keeps it until after
# test_short's leak check (a conftest hook marks the end of test_short's teardown). Only
# test_short's own resources may count as its leaks.
WAIT_FOR = """
import pathlib, time

def wait_for(name, timeout=15.0):
    deadline = time.monotonic() + timeout
    while not pathlib.Path(name).exists():
        assert time.monotonic() < deadline, f"{name} did not appear"
        time.sleep(0.02)
"""

SHORT = WAIT_FOR + """
def test_short():
    pathlib.Path("short-started").touch()
    wait_for("holding")  # the other worker's kernel now exists, newer than our snapshot
"""

HOLDER = WAIT_FOR + """
def test_holder(hermes_kernel_factory):
    wait_for("short-started")
    hermes_kernel_factory()
    pathlib.Path("holding").touch()
    wait_for("short-checked")  # outlive test_short's leak check
"""

SIGNALS = """
import pathlib

def pytest_runtest_logreport(report):
    if report.when == "teardown" and report.nodeid.endswith("::test_short"):
        pathlib.Path("short-checked").touch()  # test_short's teardown is over, its leak check included
"""


def test_workers_run_kernels_and_the_controller_sums_them(pytester, run):
    pytester.makepyfile(test_par=KERNEL_TESTS)

    result = run("-n", "2")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*= hermes-kernel summary =*", "kernels started: 4; *"])
    assert result.stdout.str().count("hermes-kernel summary") == 1


def test_a_worker_does_not_report_another_workers_kernel_as_its_leak(pytester, run, monkeypatch):
    pytester.makepyfile(test_short=SHORT, test_holder=HOLDER)
    pytester.makeconftest(SIGNALS)
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(pytester.mkdir("kernel-dirs")))

    result = run("-n", "2", "--dist", "loadfile", "--hermes-leak-grace=0.2")

    result.assert_outcomes(passed=2)
    assert "leaked" not in result.stdout.str()
    result.stdout.fnmatch_lines(["kernels started: 1; *"])


RUN_ID_PROBE = """
import os
import pathlib

import pytest

from pytest_hermes_kernel.containers.sharing import current_run_id

@pytest.mark.parametrize("i", range(4))
def test_probe(i):
    assert "PYTEST_HERMES_RUN_ID" not in os.environ  # handed on explicitly, never exported
    worker = os.environ.get("PYTEST_XDIST_WORKER", "controller")
    pathlib.Path(f"run-id-{i}").write_text(f"{worker} {current_run_id()}")
"""


def _run_ids(pytester: pytest.Pytester) -> set[str]:
    return {(pytester.path / f"run-id-{i}").read_text().split()[1] for i in range(4)}


def test_one_run_id_reaches_every_worker_and_the_setting_chooses_it(pytester, run):
    """The containers of a run are shared by its workers because they share its run id."""
    pytester.makepyfile(test_probe=RUN_ID_PROBE)

    run("-n", "2").assert_outcomes(passed=4)
    [made] = _run_ids(pytester)

    run("-n", "2").assert_outcomes(passed=4)
    assert _run_ids(pytester) != {made}, "each run makes its own id"
    run("-n", "2", "--hermes-run-id=ci-run.7").assert_outcomes(passed=4)
    assert _run_ids(pytester) == {"ci-run.7"}


def test_a_bad_run_id_is_a_usage_error(pytester, run):
    pytester.makepyfile(test_probe=RUN_ID_PROBE)
    result = run("--hermes-run-id=has/slash")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bad value 'has/slash' from --hermes-run-id*run id*"])
