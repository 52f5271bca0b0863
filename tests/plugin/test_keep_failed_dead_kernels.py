"""``--hermes-keep-failed`` and a failed test's kernel that is not alive at the test's end: its worker
died (``os._exit`` in a cell), or pytest-timeout cut its cell's wait. There is no namespace to
keep: the kernel is shut down and the summary says so.

Before, such a kernel was neither kept nor shut down: its runner and kernel dir outlived the test,
the leak check reported them as the test's (``kernel ... still runs (its runner or worker outlived
the test)``, a ``LeakError`` under ``--hermes-leak-check=error``), and the summary said nothing.
"""

from __future__ import annotations

import pytest

from tests.plugin.test_keep_failed import hermes, kept_env  # noqa: F401 - kept_env is a fixture

WORKER_DIED = """
def test_worker_died_then_fails(hermes_kernel):
    assert hermes_kernel.execute("import os; os._exit(3)").status == "ok"
"""

CELL_CUT = """
def test_cell_cut_by_a_timeout(hermes_kernel):
    hermes_kernel.execute("import time; time.sleep(30)")
"""


@pytest.mark.parametrize("transport", ["local", "docker"])
def test_a_dead_kernel_of_a_failed_test_is_shut_down_and_said_so(pytester: pytest.Pytester, run,  # type: ignore[no-untyped-def]
                                                                 request: pytest.FixtureRequest, kept_env,  # noqa: F811
                                                                 transport: str) -> None:
    if transport == "docker":
        request.getfixturevalue("docker_ready")
    pytester.makepyfile(test_dead=WORKER_DIED)
    result = run(f"--hermes-transport={transport}", "--hermes-keep-failed", "--hermes-leak-check=error")
    out = result.stdout.str()
    result.assert_outcomes(failed=1)  # no error: nothing of the kernel outlived the test
    assert "still runs" not in out and "leaked" not in out, out
    assert f"test_dead.py::test_worker_died_then_fails[{transport}]: kernel " in out, out
    assert "not kept: it was not alive at the test's end" in out and "keep: shut down" in out, out
    assert hermes("ls", "--ids").stdout.split() == [], "no record of a kernel that was not kept"


def test_a_kernel_whose_cell_pytest_timeout_cut_is_shut_down(pytester: pytest.Pytester, run,  # type: ignore[no-untyped-def]
                                                              kept_env) -> None:  # noqa: F811
    pytest.importorskip("pytest_timeout", reason="needs pytest-timeout (the dev extra)")
    pytester.makepyfile(test_cut=CELL_CUT)
    result = run("--hermes-transport=local", "--hermes-keep-failed", "--hermes-leak-check=error",
                 "--timeout=2", "-o", "timeout_method=signal", "-o", "timeout_func_only=true")
    out = result.stdout.str()
    result.assert_outcomes(failed=1)
    assert "still runs" not in out and "leaked" not in out, out
    assert "not kept: it was not alive at the test's end" in out, out


SHUT_DOWN_IN_THE_HARNESS = """
import pytest

@pytest.mark.hermes_host_sigkill(after_cell=5)  # its kernel runs in a host harness; never fires here
def test_shuts_its_kernel_down_then_fails(hermes_kernel):
    assert hermes_kernel.execute("1").value == "1"
    hermes_kernel.shutdown()
    assert False, "the test's own failure"
"""


def test_a_harness_kernel_the_test_shut_down_is_not_said_to_have_died(pytester: pytest.Pytester, run,  # type: ignore[no-untyped-def]
                                                                       kept_env) -> None:  # noqa: F811
    """A kernel the test shut down itself is left as it is, also one in a fault's host harness
    (``hermes_host_sigkill``). Before, the harness kernel had no ``stopping``, and the summary
    said of it "not kept: it was not alive at the test's end (its worker had died, or its cell's
    wait was cut) ...: shut down"."""
    pytester.makepyfile(test_harness=SHUT_DOWN_IN_THE_HARNESS)
    result = run("--hermes-transport=local", "--hermes-keep-failed", "-p", "no:randomly")
    out = result.stdout.str()
    result.assert_outcomes(failed=1)
    assert "the test's own failure" in out, out
    assert "not kept" not in out and "not alive" not in out, out
