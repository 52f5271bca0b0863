"""Seen: a docker kernel's container killed (``docker kill -s KILL``) or removed (``docker rm -f``)
while a cell ran came back ``died`` with the note "no re-attach: the kernel runner (pid 22) in
fd2d4aaf3fb1 is gone", naming neither the container's end nor its removal: the relay's end of
stream came before the engine saw the container's init end, so the re-attach found the container
"running" and its runner gone. Between cells the same kill said ``container stopped`` and the
removal ``was removed`` (tests/transports/test_a_removed_docker_container_is_named_removed.py).

Now a runner seen gone in a container the engine still calls running waits a moment
(:data:`~pytest_hermes_kernel.transports.docker.host.STOPS_SOON_S`) for the container's end and
names it.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from tests.support import docker_cell_running

pytestmark = pytest.mark.usefixtures("docker_ready")

#: Seconds the cell may take in all once its container was ended (it sleeps 60 s unless ended).
BOUND_S = 20.0


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("how", ["kill", "rm"])
def test_a_container_ended_mid_cell_is_named_in_the_loss(how: str, server: bool) -> None:
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    transport = DockerTransport(server=server, run_id=f"ended-mid-cell-{os.getpid()}-{time.monotonic_ns()}")
    handle = KernelHandle(transport)
    try:
        handle.start()
        cid = handle.launched.extra["container"]
        with ThreadPoolExecutor(1) as pool:
            cell = docker_cell_running(pool, handle, transport)
            ended = time.monotonic()
            if how == "kill":
                transport.api.kill(cid, "KILL")
            else:
                transport.api.remove_container(cid, force=True)
            result = cell.result(timeout=BOUND_S + 30)
        took = time.monotonic() - ended

        assert result.status == "died", result.summary()
        note = result.kernel.note or ""
        words = f"container stopped ({cid[:12]})" if how == "kill" else f"container {cid[:12]} was removed"
        assert words in note, note
        assert "the kernel runner (pid" not in note, note
        assert took <= BOUND_S, f"the cell came back {took:.1f} s after its container's end"
    finally:
        handle.shutdown()
        transport.close()


@pytest.mark.parametrize("how", ["kill", "rm"])
def test_a_reattach_that_finds_the_runner_gone_before_the_engine_saw_its_container_end_names_the_end(
        how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The race above, made certain: the engine still calls the container running for a moment
    after it was killed or removed, while the runner is seen gone (as the exec that looked found it)."""
    from pytest_hermes_kernel.errors import TransportLostError
    from pytest_hermes_kernel.transports.docker import probes
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    transport = DockerTransport(run_id=f"ended-lag-{os.getpid()}-{time.monotonic_ns()}")
    handle = KernelHandle(transport)
    try:
        handle.start()
        cid = handle.launched.extra["container"]
        real_state, ended = transport.hosts.state, time.monotonic()
        monkeypatch.setattr(transport.hosts, "state", lambda c, since=None: "running"
                            if time.monotonic() < ended + 0.5 else real_state(c, since))
        monkeypatch.setattr(probes, "runner_seen", lambda *args, **kwargs: False)
        if how == "kill":
            transport.api.kill(cid, "KILL")
        else:
            transport.api.remove_container(cid, force=True)

        with pytest.raises(TransportLostError) as lost:
            transport.reattach(handle.launched)

        words = f"container stopped ({cid[:12]})" if how == "kill" else f"container {cid[:12]} was removed"
        assert words in str(lost.value) and lost.value.facts.get("permanent"), lost.value
    finally:
        monkeypatch.undo()
        handle.shutdown()
        transport.close()
