"""Found reviewing the frozen-parts round (2026-12-05): ``shutdown()`` of a local kernel whose
runner was stopped (SIGSTOP, a debugger) was made to end in ~0.5 s by the local transport's
``Transport.frozen``, but docker and ssh kept saying a stopped runner was not frozen: its shutdown
still waited the whole 10 s for a reply the stopped runner could not send (10.2 s on docker, 10.1 s
on ssh, measured on both paths) before killing it. Both now look at the runner's state where it
runs (a paused container stays frozen too), so the shutdown kills it within about a second,
confirmed gone.

How soon is a figure; what is asserted is that the shutdown did not wait out its reply wait, made
60 s here as in ``test_shutdown_of_a_stopped_local_runner_ends_soon.py`` (the bound: a third of it).
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelHandle, KernelStartError, start_kernel
from pytest_hermes_kernel.kernel.contract import Launched
from tests.support import transport_of_its_own

from .test_shutdown_of_a_stopped_local_runner_ends_soon import BOUND_S, long_reply_waits  # noqa: F401 (a fixture)

pytestmark = pytest.mark.usefixtures("docker_ready", "long_reply_waits")


def signal_runner(kernel: KernelHandle, sig: str, pid: int | None = None, launched: Launched | None = None) -> None:
    """``kill -<sig>`` the kernel's runner (or ``pid``), where it runs (its pid is that host's)."""
    launched = launched or kernel.launched
    extra, argv = launched.extra, ["kill", f"-{sig}", str(pid or launched.pid)]
    if "conn" in extra:  # ssh
        assert extra["conn"].run(" ".join(argv))[0] == 0
    else:
        assert kernel.transport._run(extra["container"], argv)[0] == 0


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_shutdown_of_a_stopped_remote_runner_kills_it_without_waiting_for_its_reply(name: str, server: bool) -> None:
    with transport_of_its_own(name, server=server) as transport:
        kernel = start_kernel(transport)
        assert kernel.execute("x = 1").status == "ok"
        signal_runner(kernel, "STOP")
        began = time.monotonic()
        info = kernel.shutdown()
        took = time.monotonic() - began
        assert took < BOUND_S, f"shutdown took {took:.1f} s"  # the whole reply wait (10 s by default: 10.1 to 10.2 s)
        assert info.confirmed and info.signal == 9, info


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_a_restart_of_a_stopped_remote_runner_says_so_without_waiting_for_its_answer(name: str) -> None:
    """``restart()`` of the stopped runner waited the whole 10 s for an answer to its kill; it
    raises the same ``KernelStartError`` within about a second now, saying the runner is frozen,
    and the kernel goes on once the runner is continued."""
    with transport_of_its_own(name, server=True) as transport:
        kernel = start_kernel(transport)
        assert kernel.execute("x = 1").status == "ok"
        signal_runner(kernel, "STOP")
        try:
            began = time.monotonic()
            with pytest.raises(KernelStartError, match=r"is frozen: stopped, or its host paused\).*may still run"):
                kernel.restart()
            took = time.monotonic() - began
        finally:
            signal_runner(kernel, "CONT")
        assert took < BOUND_S, f"restart() took {took:.1f} s to fail"  # the whole kill wait (10 s by default)
        result = kernel.execute("'x' in globals()", timeout=20)
        assert (result.status, result.value, result.kernel.state_lost) == ("ok", "False", True), result
        kernel.shutdown()


@pytest.mark.parametrize("name", ["docker", "ssh"])
def test_shutdown_of_a_kernel_whose_server_is_stopped_ends_soon(name: str) -> None:
    """The runner runs but its stream rides its stopped kernel server: the round taught only the
    start and the leak scan to see a stopped server, so the shutdown waited the 10 s for the
    runner's reply, then 12 s for each of the server's answers about it (alive, rmdir): 25.2 s on
    docker. The server's every request now asks whether it is stopped, and so does the transport's
    ``frozen`` for the kernels it carries."""
    with transport_of_its_own(name, server=True) as transport:
        kernel = start_kernel(transport)
        assert kernel.execute("x = 1").status == "ok"
        launched = kernel.launched
        server = launched.extra["server"]
        signal_runner(kernel, "STOP", pid=server.pid)
        try:
            began = time.monotonic()
            info = kernel.shutdown()
            took = time.monotonic() - began
        finally:
            signal_runner(kernel, "CONT", pid=server.pid, launched=launched)
        assert took < BOUND_S, f"shutdown took {took:.1f} s"  # the reply wait, then 12 s per server answer (25.2 s by default)
        assert info.confirmed and info.signal == 9, info
