"""Bug: a wider-scoped fixture's process whose parent is a server a wider fixture started earlier
(a ``multiprocessing`` forkserver a session fixture started: every later ``Process`` is its child,
not pytest's) was not held by the fixture that started it: the leak check took it for a helper the
test had left running that forked meanwhile, reported it as the first test's leak and killed it,
and the module's next test found its fixture's process dead (1 passed, 1 failed, a
``HermesLeakWarning`` naming the process). A child of a process a wider fixture holds is that
fixture's; only a child of one nobody holds (a function fixture's helper) is the test's.
"""

from __future__ import annotations

import pytest

CONFTEST = """
import multiprocessing
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import time

import pytest

ctx = multiprocessing.get_context("forkserver")


@pytest.fixture(scope="session")
def server():
    multiprocessing.forkserver.ensure_running()  # the session's shared server
    yield
    multiprocessing.forkserver._forkserver._stop()
    multiprocessing.resource_tracker._resource_tracker._stop()


@pytest.fixture(scope="module")
def worker(server):
    proc = ctx.Process(target=time.sleep, args=(300,))
    proc.start()
    yield proc
    proc.terminate()
    proc.join(10)
    proc.close()
"""

TESTS = """
def test_first(worker):
    assert worker.is_alive()


def test_second(worker):
    assert worker.is_alive(), "the module fixture's process was killed after the first test"
"""


def test_a_module_fixtures_process_forked_by_a_session_server_is_held_by_it(pytester: pytest.Pytester, run) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_forkserver=TESTS)
    result = run("--hermes-leak-check=warn", "--hermes-leak-grace=0.5", "-p", "no:xdist", "-W",
                 "error::pytest_hermes_kernel.errors.HermesLeakWarning")
    result.assert_outcomes(passed=2)
