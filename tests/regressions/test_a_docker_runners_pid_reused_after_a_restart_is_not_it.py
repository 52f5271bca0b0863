"""Seen: the run's kernel host container restarted (``docker restart``, the engine's restart
policy after a crash or a daemon restart) and took kernel A's runner with it; pids start over in
the container, and kernel B, started after the restart, got A's old runner pid. The next cell on
A then probed that pid, found it running ("runner still alive; killed"), waited 10 s for a
re-attach to a runner that was gone, and SIGKILLed the session of that pid: B's. B's next cell
came back ``died``, its state lost. A's shutdown or restart waited on and killed B the same way.

Now a runner is also its container's start: a container started again since the launch ended it
(with every process in it), whatever now has its pid. Both start paths.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelHandle, start_kernel
from pytest_hermes_kernel.transports.docker.transport import DockerTransport
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: Seconds the first cell (or the shutdown, the restart) of the restarted kernel may take: what it
#: waits on is a look at the container (its start time) and at the runner, a second here; a loaded
#: CI machine's docker calls can take seconds each (a bound of 5 s was thin). The old code waited
#: the whole re-attach, made :data:`RECONNECT_S` for that kernel.
SETTLE_S = 30.0
#: The restarted kernel's ``reconnect_timeout``: far above :data:`SETTLE_S`.
RECONNECT_S = 60.0
#: The least pid of the kernel whose runner's pid is reused (room below it after the restart).
FIRST_PID = 200
#: Restarts to try until a new kernel gets the old runner's pid.
TRIES = 8

#: argv[1]: a pid. Forks (and reaps) children until one got that pid or a greater one; prints the last.
TAKE_PIDS = """
import os, sys
while True:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    if pid >= int(sys.argv[1]):
        break
print(pid)
"""


def _take_pids_up_to(transport: DockerTransport, cid: str, pid: int) -> int:
    """Take the container's pids up to ``pid`` (the next process gets a greater one); the last taken."""
    code, out = transport.run_script(cid, TAKE_PIDS, str(pid))
    assert code == 0, out
    return int(out)


def _restart(transport: DockerTransport, cid: str) -> None:
    transport.api.restart(cid, timeout=1)
    wait_until(lambda: transport.hosts.state(cid) == "running", 20.0, what="the restarted container to run")


def _next_start(transport: DockerTransport) -> KernelHandle:
    """A kernel started after one started and shut down: on the server path a start takes the
    spare its server forked after the start before (kernel/runner/spare.py), so only the second
    start after pids were taken gets a pid above them; the spawn path runs the same steps."""
    start_kernel(transport).shutdown()
    return start_kernel(transport)


def _gap(transport: DockerTransport, cid: str) -> int:
    """Pids :func:`_next_start` takes before its runner's: the most common of three probes (a
    start's own steps; a neighbour's exec now and then takes one more)."""
    gaps = []
    for _ in range(3):
        taken = _take_pids_up_to(transport, cid, 0)
        probe = _next_start(transport)
        gaps.append((probe.runner_pid or 0) - taken)
        probe.shutdown()
    return max(set(gaps), key=gaps.count)


def _kernel_on_pid(transport: DockerTransport, cid: str, pid: int, tries: list[str]) -> KernelHandle | None:
    """Restart the container, then take the pids below ``pid`` and start a kernel: one whose
    runner got ``pid``, or ``None`` (another process took it; what happened is added to ``tries``)."""
    _restart(transport, cid)
    start_kernel(transport).shutdown()  # a kernel server runs again (server path)
    gap = _gap(transport, cid)
    took = _take_pids_up_to(transport, cid, pid - gap)
    if took != pid - gap:
        tries.append(f"gap {gap}: pid {pid - gap} was taken already (next free {took})")
        return None
    k = _next_start(transport)
    if k.runner_pid == pid:
        return k
    tries.append(f"gap {gap}: the runner got pid {k.runner_pid}")
    k.shutdown()
    return None


@pytest.mark.parametrize("use", ["execute", "shutdown", "restart"])
def test_a_reused_runner_pid_in_a_restarted_container_is_not_taken_for_the_runner(own_docker, start, use):
    warm = start(own_docker)
    cid = warm.launched.extra["container"]
    _take_pids_up_to(own_docker, cid, FIRST_PID)  # room below the runner's pid for the kernels after the restart
    start(own_docker).shutdown()  # (the server path's spare was forked before: see _next_start)
    a = start(own_docker, reconnect_timeout=RECONNECT_S)
    assert a.execute("x = 1").status == "ok"
    pid = a.runner_pid
    b, tries = None, []
    for _ in range(TRIES):
        b = _kernel_on_pid(own_docker, cid, pid, tries)
        if b is not None:
            break
    assert b is not None, f"no kernel got the old runner pid {pid} in {TRIES} restarts: {tries}"
    try:
        assert b.execute("y = 1").status == "ok"
        began = time.monotonic()
        if use == "execute":
            lost = a.execute("x")
        elif use == "shutdown":
            a.shutdown()
        else:
            a.restart()
        took = time.monotonic() - began
        after_b = b.execute("y")
    finally:
        b.shutdown()

    assert (after_b.status, after_b.value) == ("ok", "1"), after_b.summary()  # the other kernel is untouched
    if use == "execute":
        assert lost.status == "died" and lost.kernel.state_lost, lost.summary()
        assert "still alive" not in lost.kernel.note, lost.kernel.note
    elif use == "restart":
        assert a.execute("x = 2; x").value == "2"
    assert took < SETTLE_S, (took, use)
