"""A local server's spare whose *worker* was stopped (SIGSTOP) before the claim failed the next
start: ``KernelStartError: the local kernel runner died during start (exit code 70), before its
hello`` with ``the kernel's worker did not take its config (a spare's claim): b''`` in the log.
The spare's supervisor had taken the kernel's channel already, so no fork could stand in; now
it kills the silent worker and forks the kernel's first worker itself, as a restart does."""

from __future__ import annotations

import os
import signal


from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.procs import pid_alive
from tests.support import kernels_shut_down_after, local_transport_closed_after, server_spare, wait_until  # noqa: F401 - fixtures


def test_a_kernel_claimed_from_a_spare_whose_worker_went_silent_starts(transport, kernels):
    kernels.append(start_kernel(transport))
    kernels[0].execute("1")
    runner, worker = server_spare(transport, {kernels[0].runner_pid})
    os.kill(worker, signal.SIGSTOP)

    k = start_kernel(transport, env={"HK_X": "x"})
    kernels.append(k)
    first = k.execute("import os; x = 41; (os.getpid(), os.environ['HK_X'], os.environ['HERMES_KERNEL_ID'])")

    assert first.status == "ok", first.summary()
    pid, env, kernel_id = eval(first.value)  # noqa: S307 - the kernel's own repr of a tuple
    assert (env, kernel_id) == ("x", k.kernel_id)
    assert pid != worker
    wait_until(lambda: not pid_alive(worker), 5.0, what="the silent worker to be killed")
    assert k.execute("x + 1").value == "42"
