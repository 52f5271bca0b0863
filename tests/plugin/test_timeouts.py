"""Handed case B40 (c): a pytest-timeout timeout in a test that holds a kernel leaves nothing.

An inner run (pytest in a subprocess) starts a kernel and sleeps past ``--timeout=2``:

* ``timeout_method=signal``: pytest-timeout fails the test from SIGALRM, so the fixtures' own
  teardown ends the kernel; at exit nothing of the run is left.
* ``timeout_method=thread``: pytest-timeout dumps the stacks and ``os._exit()``s: no teardown,
  no atexit hook runs. On local the kernel ends itself on its parent-death lease (the host's
  end closes the fd it watches); the run directory is not made for a local-only run. On docker
  the kernel host container (and the kernel server inside it, until its idle timer) outlives the
  process: the next session's start sweeps containers whose creating host is gone (by label),
  which this test checks by starting one.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.rundir import run_dir_path
from pytest_hermes_kernel.procs import processes_with_env
from tests.plugin.test_interrupts import _containers_of
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, wait_until

pytest.importorskip("pytest_timeout", reason="B40 (c) needs pytest-timeout (the dev extra)")

#: The inner runs' timeout times the test's call only: a kernel's start in its setup, slower than
#: the timeout on a loaded machine (an -n 4 run beside two busy loops), was cut there instead ("ERROR at
#: setup", the cell the test is about never sent).
FUNC_ONLY = ("-o", "timeout_func_only=true")

INNER = """
import time


def test_sleeps_past_the_timeout(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"
    time.sleep(60)


def test_next_session(hermes_kernel):
    assert hermes_kernel.execute("2 + 2").value == "4"
"""


def _inner(pytester: pytest.Pytester, transport: str, run_id: str, *args: str) -> tuple[int, int, str]:
    """Run the inner session; ``(its pid, exit status, output)``."""
    with subprocess.Popen(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-q",
             f"--hermes-transport={transport}", "--hermes-require-transports", f"--hermes-run-id={run_id}", *args],
            cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:
        try:
            out = proc.communicate(timeout=RUN_TIMEOUT_S)[0]
        finally:
            if proc.poll() is None:
                proc.kill()
    return proc.pid, proc.returncode, out


@pytest.mark.parametrize("transport", ["local", "docker"])
@pytest.mark.parametrize("method", ["thread", "signal"])
def test_a_timed_out_test_leaves_nothing(pytester: pytest.Pytester, request: pytest.FixtureRequest,
                                         transport: str, method: str) -> None:
    if transport == "docker":
        request.getfixturevalue("docker_ready")
    pytester.makepyfile(test_inner=INNER)
    run_id = f"b40t-{uuid.uuid4().hex}"
    pid, code, out = _inner(pytester, transport, run_id, "--timeout=2", "-o", f"timeout_method={method}", *FUNC_ONLY,
                          "-k", "sleeps")
    assert code == pytest.ExitCode.TESTS_FAILED and "Timeout" in out, out
    if transport == "docker":  # first: the kernel processes inside a surviving container go with it
        if method == "thread" and _containers_of(run_id):  # no teardown ran: the next session sweeps it
            _, code, nxt = _inner(pytester, transport, f"b40t-next-{uuid.uuid4().hex}", "-k", "next_session")
            assert code == pytest.ExitCode.OK, nxt
        wait_until(lambda: not _containers_of(run_id), 10.0, what="the timed-out run's containers to be gone")
    wait_until(lambda: not processes_with_env("HERMES_KERNEL_HOST_PID", str(pid)), 10.0,
               what="the timed-out run's kernel processes to be gone")
    assert not Path(run_dir_path(run_id)).exists(), f"the run's files survived it:\n{out}"


STUBBORN = """
import pathlib, time
import pytest
from pytest_hermes_kernel import FileTransferError

HERE = pathlib.Path(__file__).parent
WEDGE = '''
import re, signal, threading, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
def hog():
    time.sleep(0.2)
    open('wedged', 'w').close()
    re.match(r'(a+)+$', 'a' * 64 + 'b')  # sre never lets the GIL go: the worker reads no request
threading.Thread(target=hog, daemon=True).start()
'''


@pytest.mark.hermes_kernel(shutdown_grace=1.0)
def test_fails_holding_a_kernel_that_will_not_end(hermes_kernel, tmp_path):
    hermes_kernel.add_listener(lambda event, handle, info: event == "shutdown" and (HERE / "step").write_text(f"{info.step} {info.signal}"))
    hermes_kernel.execute(WEDGE)
    deadline = time.monotonic() + 30
    while True:  # until the hog holds the GIL (a transfer needs no worker)
        try:
            hermes_kernel.download("wedged", tmp_path / "wedged")
            break
        except FileTransferError:
            assert time.monotonic() < deadline, "the hog never started"
            time.sleep(0.05)
    assert False, "deliberate failure"
"""


@pytest.mark.parametrize("transport", ["local", "docker"])
def test_the_teardown_of_a_failed_test_is_bounded_by_the_kits_own_ladder(pytester: pytest.Pytester,
                                                                           request: pytest.FixtureRequest,
                                                                           transport: str) -> None:
    """B40 (d): after a failed test the kernel's worker answers neither the exit request (a thread
    of a cell holds the GIL in one C call) nor SIGTERM (ignored); pytest-timeout does not time a
    failed test's teardown (#196), so the kit's shutdown ladder (request -> SIGTERM -> SIGKILL,
    ``shutdown_grace`` each) must end it, at its last rung. Before, the worker held a non-daemon
    thread only: the exit request ended it (the worker leaves by ``os._exit``), so the case passed
    with the SIGTERM and SIGKILL rungs and the host's kill from outside all gone (checked). The
    runner's own end SIGKILLs the worker's group too, so nothing is left either way: the case also
    asserts what ``shutdown()`` reports, ``step="sigkill"`` with ``signal=9`` (``None`` without the
    last rung: checked)."""
    if transport == "docker":
        request.getfixturevalue("docker_ready")
    pytester.makepyfile(test_inner=STUBBORN)
    pid, code, out = _inner(pytester, transport, f"b40d-{uuid.uuid4().hex}", "--timeout=60")
    assert code == pytest.ExitCode.TESTS_FAILED and "deliberate failure" in out, out
    assert "Timeout" not in out, out  # the teardown ended within the kit's ladder, not pytest-timeout's
    wait_until(lambda: not processes_with_env("HERMES_KERNEL_HOST_PID", str(pid)), 10.0,
               what="the failed test's kernel processes to be gone")
    assert (pytester.path / "step").read_text() == "sigkill 9", out  # the last rung ended it: its shutdown() says so


CUT = """
def test_a_cell_runs_past_the_timeout(hermes_kernel):
    hermes_kernel.execute("x = 41")
    hermes_kernel.execute("import time; time.sleep(30)")
"""


def test_the_cell_a_timeout_cut_is_in_the_story(pytester: pytest.Pytester) -> None:
    """pytest-timeout's ``Failed`` (signal method) lands in the cell's wait: the failing test's
    story lists that cell with what cut it. Before, the last cells ended with cell 1: the one that
    hung, the cell a user looks for, was not there."""
    pytester.makepyfile(test_inner=CUT)
    _, code, out = _inner(pytester, "local", f"cut-{uuid.uuid4().hex}", "--timeout=2", "-o", "timeout_method=signal",
                          *FUNC_ONLY)
    assert code == pytest.ExitCode.TESTS_FAILED, out
    story = out[out.index("last 5 cells:"):]
    assert "cell 1 (generation 0): status=ok" in story, out
    # pytest-timeout 2.4's words; 2.1 to 2.3 (the dev extra allows 2.1) say "Timeout >2.0s"
    assert re.search(r"cell 2 \(generation 0\): raised Failed: Timeout (\(>2\.0s\) from pytest-timeout|>2\.0s$)",
                     story, re.M), out


QUICK = """
import pytest


@pytest.mark.parametrize("n", range(4))
def test_quick(hermes_kernel, n):
    assert hermes_kernel.execute(f"{n} + 1").value == str(n + 1)
"""


def test_the_thread_methods_timer_is_no_leak(pytester: pytest.Pytester) -> None:
    """``timeout_method=thread`` starts a timer thread per test, before its setup, and cancels it
    after its teardown. Before, the leak check reported it in every second test (``leaked thread:
    thread 'pytest_timeout test_inner.py::test_quick[local-1]'``, 2 of 4; errors under
    ``--hermes-leak-check=error``): that check's "before" was the previous test's "after"."""
    pytester.makepyfile(test_inner=QUICK)
    _, code, out = _inner(pytester, "local", f"timer-{uuid.uuid4().hex}", "--timeout=60", "-o", "timeout_method=thread",
                          "--hermes-leak-check=error", "-p", "no:randomly")
    assert code == pytest.ExitCode.OK and "4 passed" in out, out
    assert "leaked" not in out and "pytest_timeout" not in out, out


FAULT_CUT = """
import pytest


@pytest.mark.hermes_kernel_sigkill(during_cell=2, delay=10)
def test_cut_before_its_fault(hermes_kernel):
    hermes_kernel.execute("x = 1")
    hermes_kernel.execute("import time; time.sleep(30)")


@pytest.mark.hermes_kernel_sigkill(after_cell=2)
def test_fails_before_its_fault(hermes_kernel):
    hermes_kernel.execute("x = 1")
    assert False, "the test's own failure"
"""


def test_a_test_cut_or_failed_before_its_fault_gets_no_second_error(pytester: pytest.Pytester) -> None:
    """A fault marker's "never fired" check is for a test that passed without its fault. Before,
    a test pytest-timeout cut in cell 2 also errored at teardown with ``hermes_kernel_sigkill(during_cell=2)
    never fired: cell 2 ended before the 10 s delay was over`` (the cell had not ended: the timeout cut
    its wait), and a test that failed after cell 1 with ``the test ran 1 cell``: 2 failed, 2 errors."""
    pytester.makepyfile(test_inner=FAULT_CUT)
    _, code, out = _inner(pytester, "local", f"fcut-{uuid.uuid4().hex}", "--timeout=3", "-o", "timeout_method=signal", *FUNC_ONLY,
                          "--hermes-leak-check=error", "-p", "no:randomly")
    assert code == pytest.ExitCode.TESTS_FAILED and "2 failed in" in out, out
    assert "never fired" not in out and "ERROR at teardown" not in out, out



THREAD_CUT = """
import threading
import time


def test_cell_of_a_thread_cut(hermes_kernel):
    hermes_kernel.execute("x = 1")
    threading.Thread(target=hermes_kernel.execute, args=("import time; time.sleep(30)",), daemon=True).start()
    time.sleep(30)
"""


def test_a_cell_still_running_when_the_test_was_cut_is_in_the_story(pytester: pytest.Pytester) -> None:
    """pytest-timeout cuts a test while a cell runs in another thread (an ``aexecute`` cell of an
    async test runs in a thread of its own): the report is made while the cell is in flight.
    Before, the story's last cells ended with cell 1, as if the test had hung between cells."""
    pytester.makepyfile(test_inner=THREAD_CUT)
    _, code, out = _inner(pytester, "local", f"tcut-{uuid.uuid4().hex}", "--timeout=3", "-o", "timeout_method=signal", *FUNC_ONLY,
                          "--hermes-leak-check=error", "-p", "no:randomly")
    assert code == pytest.ExitCode.TESTS_FAILED and "1 failed in" in out, out
    story = out[out.index("last 5 cells:"):]
    assert "cell 2 (generation 0): still running when this report was made" in story, out


LEAK_IN_THE_GRACE = """
import signal


def test_leaks_a_helper_then_runs_late(hermes_kernel):
    hermes_kernel.execute("import subprocess; subprocess.Popen(['sleep', '300'], start_new_session=True)")
    signal.setitimer(signal.ITIMER_REAL, 3.0)  # pytest-timeout's own alarm, due in the teardown's 10-s grace
"""


def test_a_timeout_during_the_leak_checks_grace_still_reports_and_ends_the_leak(pytester: pytest.Pytester) -> None:
    """pytest-timeout's alarm can land in the leak check's re-checks (``--hermes-leak-grace``, 3 s):
    before, that check died with the ``Failed: Timeout``, so the helper the test left was neither
    named nor ended: ``sleep 300`` outlived pytest, reparented to init. Now the leak is reported
    (``LeakError``, the timeout raised after it) and ended. The test re-arms pytest-timeout's alarm
    as its call ends, 3 s into a 10-s grace: a ``--timeout=2`` counted from the setup, with a 1.5-s
    sleep, fired in the kernel's start on a loaded machine (an ``-n 4`` run beside two busy loops)."""
    pytester.makepyfile(test_inner=LEAK_IN_THE_GRACE)
    pid, code, out = _inner(pytester, "local", f"grace-{uuid.uuid4().hex}", "--timeout=60", "-o", "timeout_method=signal",
                            "--hermes-leak-grace=10",
                            "--hermes-leak-check=error", "-p", "no:randomly")
    assert code == pytest.ExitCode.TESTS_FAILED and "Timeout" in out, out
    assert "leaked kernel process: pid" in out and "sleep 300" in out, out
    wait_until(lambda: not processes_with_env("HERMES_KERNEL_HOST_PID", str(pid)), 10.0,
               what="the leaked helper to be ended")
