"""Seen: a cell with ``timeout=1`` whose sshd was paused mid-cell came back ``timeout`` with
``watchdog="reset_failed"`` and the note "the kernel was killed but its replacement failed to
start: ... Error reading SSH protocol banner", though nothing had been killed: the kill's exec had
timed out, and the runner ran on, frozen, until the unpause. The ladder counted the runner dead
because ``alive()`` said ``False``, which on a silent ssh host means "cannot tell" (the probe is
refused at once). With the runner dropped, a ``shutdown()`` said ``already-exited``,
``confirmed=True``.

Now only a runner the transport saw gone (``Transport.seen_gone``) counts as dead: the cell is
``abandoned`` ("could not be reached; not reset: the work may still be running"), the runner stays
the kernel's, a next cell while the host is still silent starts no second runner beside it, and
once the host answers the next cell ends it and runs on a fresh one; a shutdown while the host is
silent is not ``confirmed``. Both start paths: a runner forked by the host's kernel server, and one
spawned by its own execs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_hermes_kernel import KernelHandle, KernelStartError
from pytest_hermes_kernel.kernel.results import CellResult
from pytest_hermes_kernel.kernel.watchdog import WatchdogPolicy
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import CellStarted, run_in_thread, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: own_sshd's keepalives: the connection gives up on the paused host after 3 s, not the default 9 s.
SSHD_OPTIONS = {"keepalive_interval": 1.0, "keepalive_missed": 3}

#: A short ladder: SIGINT after the 1 s budget, the worker's kill 0.5 s later, the runner's kill
#: from outside 0.5 s after that (it waits for its exec until the connection gives up: SSHD_OPTIONS).
FAST = WatchdogPolicy(interrupt_grace=0.5, kill_grace=0.5)
BUDGET_S = 1.0
#: Seconds the cell may take in all: the ladder, the kill's exec on the silent host, the probe.
SETTLE_S = 30.0
#: Seconds after the unpause within which the next cell must reach the host: the probes that end a
#: runner try a silent host once per ``SILENT_RETRY_S + SILENT_CONNECT_S`` (5 s).
ANSWERS_AGAIN_S = 15.0


def _timed_out_on_a_silent_host(transport: SshTransport, k: KernelHandle, started: CellStarted,
                                then: Callable[[], object] = lambda: None) -> CellResult:
    """Run a cell that sleeps, pause the sshd once it runs, wait for its result, call ``then()``
    still paused, unpause."""
    api, cid = transport.sshd.docker.api, transport.sshd_container_id
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(60)", timeout=BUDGET_S)
    try:
        started.wait()
        api.pause(cid)
        result = fut.result(timeout=SETTLE_S)
        then()
    finally:
        api.unpause(cid)
    return result


def _assert_abandoned(result: CellResult) -> None:
    assert (result.status, result.watchdog) == ("timeout", "abandoned"), result.summary()
    assert "could not be reached" in result.kernel.note, result.kernel.note
    assert "the work may still be running" in result.kernel.note, result.kernel.note
    assert "killed" not in result.kernel.note and "restarted" not in result.kernel.note, result.kernel.note
    assert (result.kernel.state_lost, result.kernel.reason) == (True, "timeout"), result.summary()


def _runners(transport: SshTransport, k: KernelHandle) -> set[int]:
    """Pids of the kernel's processes on the ssh host (runners and workers)."""
    return {int(line.split(":", 1)[0]) for line in transport.kernel_processes(k.kernel_id)}


def _next_cell_once_the_host_answers(k: KernelHandle) -> CellResult:
    """The next cell, asked again while it is refused because the host was not reached yet."""
    results: list[CellResult] = []

    def ran() -> bool:
        try:
            results.append(k.execute("'x' in globals()"))
        except KernelStartError as exc:
            assert "was not seen gone and could not be ended" in str(exc), exc
            return False
        return True

    wait_until(ran, ANSWERS_AGAIN_S, interval=0.5, what="the next cell to run once the host answers")
    return results[0]


def test_a_cell_timed_out_on_a_silent_host_is_abandoned_and_no_second_runner_starts(own_sshd, start):
    started = CellStarted()
    k = start(own_sshd, watchdog=FAST, tools=started.tools())
    assert k.execute("x = 1").status == "ok"
    old_runner = k.runner_pid
    refused: list[str] = []

    def next_cell_while_silent() -> None:
        with pytest.raises(KernelStartError, match="was not seen gone and could not be ended") as exc:
            k.execute("x")
        refused.append(str(exc.value))

    _assert_abandoned(_timed_out_on_a_silent_host(own_sshd, k, started, then=next_cell_while_silent))
    assert refused
    after = _next_cell_once_the_host_answers(k)  # the frozen runner is ended, a fresh one runs it

    assert (after.status, after.value) == ("ok", "False"), after.summary()
    assert (after.kernel.state_lost, after.kernel.reason) == (True, "timeout"), after.summary()
    assert k.runner_pid not in (None, old_runner)
    wait_until(lambda: old_runner not in _runners(own_sshd, k), 5.0, interval=0.2,
               what=f"the frozen runner {old_runner} to end")
    info = k.shutdown()

    assert info.confirmed, info
    wait_until(lambda: not _runners(own_sshd, k), 5.0, interval=0.2, what="the kernel's processes to end")


def test_a_shutdown_while_the_host_is_silent_is_not_confirmed(own_sshd, start):
    started = CellStarted()
    k = start(own_sshd, watchdog=FAST, shutdown_grace=0.5, tools=started.tools())
    assert k.execute("x = 1").status == "ok"
    ended: list[object] = []

    _assert_abandoned(_timed_out_on_a_silent_host(own_sshd, k, started, then=lambda: ended.append(k.shutdown())))

    info = ended[0]
    assert not info.confirmed, info  # the runner is frozen, not seen gone: its orphan timer ends it
    assert info.step != "already-exited" and "may still run" in info.note, info
