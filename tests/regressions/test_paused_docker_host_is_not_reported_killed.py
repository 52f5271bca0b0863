"""Seen: a cell with ``timeout=8`` ran into a ``docker pause``d kernel host container and came back
``timeout`` with the note "the kernel was killed but its replacement failed to start", though every
exec had got ``409 Conflict ... is paused``: nothing was killed. After ``docker unpause``,
``shutdown()`` said ``step='already-exited', confirmed=True`` and left the runner running; on the
spawn path a next cell ran beside it. The docker transport's ``alive()`` read the refused exec as
"gone", so the watchdog counted the frozen runner dead and dropped it.

Now a paused container's runner is alive (frozen, not gone): the cell is abandoned ("the work may
still be running"), the runner stays the kernel's, a next cell while the container is still paused
refuses to start a second runner beside it, and after the unpause a shutdown or the next cell ends
it. Both start paths: a runner forked by the container's kernel server, and one spawned by its own
execs.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from pytest_hermes_kernel import KernelHandle, KernelStartError
from pytest_hermes_kernel.kernel.results import CellResult
from pytest_hermes_kernel.kernel.watchdog import WatchdogPolicy
from pytest_hermes_kernel.transports.docker.transport import DockerTransport
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: The cell's budget and ladder: SIGINT at 1 s, the kill 0.5 s later, abandoned 0.5 s after that
#: (~2 s; the default graces, 2 s each, took ~6 s), well before the channel's keepalives give up on
#: the silent stream (~12 s).
BUDGET_S = 1.0
LADDER = WatchdogPolicy(interrupt_grace=0.5, kill_grace=0.5)


def _cell_into_paused_host(transport: DockerTransport, k: KernelHandle, then: Callable[[], object] = lambda: None
                           ) -> CellResult:
    """Run a cell with the kernel's container paused, call ``then()`` still paused, unpause."""
    cid = k.launched.extra["container"]
    transport.api.pause(cid)
    try:
        result = k.execute("2 + 2", timeout=BUDGET_S)
        then()
    finally:
        transport.api.unpause(cid)
    return result


def _dir_exists(transport: DockerTransport, container_id: str, path: str) -> bool:
    code, _, _ = transport._run(container_id, ["test", "-e", path])
    return code == 0


def _assert_abandoned(result: CellResult) -> None:
    assert (result.status, result.watchdog) == ("timeout", "abandoned"), result.summary()
    assert "the work may still be running" in result.kernel.note, result.kernel.note
    assert "killed" not in result.kernel.note, result.kernel.note
    assert (result.kernel.state_lost, result.kernel.reason) == (True, "timeout"), result.summary()


def test_shutdown_after_the_unpause_ends_the_runner_of_an_abandoned_cell(own_docker, start):
    k = start(own_docker, watchdog=LADDER)
    assert k.execute("x = 1").status == "ok"
    cid, kdir = k.launched.extra["container"], k.launched.kernel_dir

    _assert_abandoned(_cell_into_paused_host(own_docker, k))
    assert own_docker.kernel_processes(k.kernel_id), "the frozen runner is still there after the unpause"
    info = k.shutdown()

    assert info.confirmed, info
    wait_until(lambda: own_docker.kernel_processes(k.kernel_id) == [], 5.0, what="the kernel's processes to end")
    assert not _dir_exists(own_docker, cid, kdir), f"the kernel dir {kdir} is still there"


def test_no_second_runner_starts_beside_a_frozen_one(own_docker, start):
    k = start(own_docker, watchdog=LADDER)
    assert k.execute("x = 1").status == "ok"
    cid, old_dir, old_runner = k.launched.extra["container"], k.launched.kernel_dir, k.runner_pid
    refused: list[str] = []

    def next_cell_while_paused() -> None:
        with pytest.raises(KernelStartError, match="was not seen gone and could not be ended") as exc:
            k.execute("x")
        refused.append(str(exc.value))

    _assert_abandoned(_cell_into_paused_host(own_docker, k, then=next_cell_while_paused))
    assert refused
    after = k.execute("'x' in globals()")  # the host answers again: the frozen runner is ended, a fresh one runs it

    assert (after.status, after.value) == ("ok", "False"), after.summary()
    assert (after.kernel.state_lost, after.kernel.reason) == (True, "timeout"), after.summary()
    assert k.runner_pid != old_runner
    running = [line.split(":", 1)[0] for line in own_docker.kernel_processes(k.kernel_id)]
    assert str(old_runner) not in running, running
    k.shutdown()
    wait_until(lambda: own_docker.kernel_processes(k.kernel_id) == [], 5.0, what="the kernel's processes to end")
    assert not _dir_exists(own_docker, cid, old_dir), f"the kernel dir {old_dir} is still there"
