"""Handed case B42: a child forked inside a test carried on with the parent's kernel client: it
used or shut down the parent's kernel (or closed its ssh or docker connection), and a child that
did not ``os._exit`` tore fixtures down a second time.

Inner run, on local, docker, ssh and filecell, with the leak check as errors: a test forks with
``multiprocessing`` (``fork``); the child's ``execute`` raises ``KernelForkedError`` and it exits
with ``sys.exit(0)``. A second test forks with ``os.fork`` and the child does what a child
carrying on as a second pytest would: it tears the kernel down (``shutdown``) and runs the exit
hooks (registries, shared transports). In both, the parent's next cell still sees its state,
and the parent's teardown ends the kernel exactly once.
"""

from __future__ import annotations

import pytest

INNER = """
import atexit, multiprocessing, os, sys
import pytest
from pytest_hermes_kernel import KernelForkedError

SHUTDOWNS = []


@pytest.fixture
def kernel(hermes_kernel):
    hermes_kernel.add_listener(lambda event, handle, payload: event == "shutdown" and SHUTDOWNS.append(os.getpid()))
    yield hermes_kernel


def _child(kernel, queue):
    try:
        kernel.execute("1")
        queue.put("executed")
    except KernelForkedError as exc:
        queue.put(f"refused: {exc}")
    sys.exit(0)


def test_multiprocessing_child(kernel):
    kernel.execute("x = 41")
    ctx = multiprocessing.get_context("fork")
    queue = ctx.SimpleQueue()
    child = ctx.Process(target=_child, args=(kernel, queue))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    message = queue.get()
    assert message.startswith("refused: ") and "forked child" in message, message
    assert kernel.execute("x + 1").value == "42"


def test_os_fork_child_tears_down_and_exits(kernel):
    kernel.execute("x = 1")
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            info = kernel.shutdown()
            code = 0 if info.step == "forked-child" else 3
            atexit._run_exitfuncs()
        except BaseException:
            code = 4
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert kernel.execute("x").value == "1"


def test_teardown_ran_once_each_in_the_parent():
    assert SHUTDOWNS == [os.getpid(), os.getpid()]
"""


@pytest.mark.parametrize("transport", ["local", "docker", "ssh", "filecell"])
def test_a_forked_child_never_uses_or_ends_the_parents_kernel(pytester: pytest.Pytester, run,
                                                              request: pytest.FixtureRequest, transport: str) -> None:
    if transport in ("docker", "ssh"):
        request.getfixturevalue("docker_ready")
    pytester.makepyfile(test_inner=INNER)

    result = run(f"--hermes-transport={transport}", "--hermes-leak-check=error")

    result.assert_outcomes(passed=3)
