"""A host harness whose host was SIGKILLed shuts down cleanly even when this thread could not yet
reap the host: ``Popen.poll()`` answers ``None`` while another thread waits on the process (a
``hermes_host_sigkill(during_cell=N, delay=S)`` timer inside :meth:`HarnessKernel.kill_host`).
The shutdown request then fails to reach the dead host and stays in the pipe's buffer; closing the
pipe flushed it again and raised ``BrokenPipeError`` out of the fixture teardown (seen once in CI,
``tests/meta::test_kernel_outliving_its_killed_host_is_caught``). And a request submitted while the
host dies is answered ``HostGoneError`` at once, never left waiting: the reply reader's end and the
registration of a request are one lock's work (without it: 13 of 30 runs under ``-n 4`` waited
for a reply that no reader would deliver)."""

from __future__ import annotations

import os
import signal

import pytest

from pytest_hermes_kernel.errors import HostGoneError
from pytest_hermes_kernel.faults.harness import HarnessKernel


def test_shutdown_after_the_host_died_unreaped_reports_already_exited(monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = HarnessKernel("local")
    try:
        assert kernel.execute("x = 1; x").value == "1"
        os.kill(kernel.host_pid, signal.SIGKILL)
        with pytest.raises(HostGoneError):  # the reader saw the host's end: the test goes on
            kernel.execute_async("x").result(timeout=30)
        monkeypatch.setattr(kernel.proc, "poll", lambda: None)  # as while another thread waits on it

        info = kernel.shutdown()

        assert info.step == "already-exited"
        assert kernel.proc.returncode == -signal.SIGKILL
    finally:
        monkeypatch.undo()
        kernel.kill_survivors()
        kernel.shutdown()


def test_a_second_shutdown_of_a_harness_kernel_returns_the_first_ones_exit_info() -> None:
    # HarnessKernel.shutdown() says "idempotent" (as the Kernel protocol's): a second call after a
    # polite end said ExitInfo(step="already-exited", note="its host was gone"), of a host that was
    # never killed, where KernelHandle's returns the first call's (a docstring check, 2026-12-06)
    kernel = HarnessKernel("local")
    try:
        assert kernel.execute("x = 1; x").value == "1"
        first = kernel.shutdown()
        assert first.step == "request", first
        assert kernel.shutdown() == first
        assert kernel.close() == first
    finally:
        kernel.kill_survivors()
        kernel.shutdown()
