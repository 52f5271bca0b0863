"""Seen: the sshd container restarted (its host rebooted) and took kernel A's runner with it; pids
start over there, and kernel C, started after the reboot, got A's old runner pid. The next cell
on A then probed that pid, found it running ("runner still alive; killed"), waited 10 s for a
re-attach to a kernel dir that was gone, and SIGKILLed the session of that pid: kernel C's. C's
next cell came back ``died``, its state lost. On a real host the pid may be anyone's of the same
login (a tmux server, a login shell): its whole session was killed.

Now a runner is the pid *and* its kernel's id in its environment: a pid that carries another
kernel's id is no runner of ours (seen gone), and a kill leaves alone a session whose live
leader does not carry the kernel's id. Both start paths.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelHandle, start_kernel
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

#: Seconds the first cell of the rebooted kernel may take (a dead stream, one probe: an ssh command,
#: which can take seconds each on a loaded CI machine: a bound of 5 s was thin). The old code waited
#: the whole re-attach, made :data:`RECONNECT_S` for that kernel.
SETTLE_S = 30.0
#: The rebooted kernel's ``reconnect_timeout``: far above :data:`SETTLE_S`.
RECONNECT_S = 60.0
#: The least pid of the kernel whose runner's pid is reused.
FIRST_PID = 80
#: Reboots to try until a new kernel gets the old runner's pid.
TRIES = 5


def _shell_pid(transport: SshTransport) -> int:
    code, out, _ = transport.connection().run("echo $$")
    assert code == 0, out
    return int(out)


def _reboot(transport: SshTransport) -> None:
    transport.sshd.docker.api.restart(transport.sshd_container_id, timeout=1)

    def answers() -> bool:
        try:
            _shell_pid(transport)
        except Exception:  # noqa: BLE001 - not up yet
            return False
        return True

    wait_until(answers, 20.0, interval=0.2, what="the rebooted sshd to answer")


def _next_start(transport: SshTransport) -> KernelHandle:
    """A kernel started after one started and shut down: on the server path a start takes the
    spare its server forked after the start before (kernel/runner/spare.py), so only the second
    start after pids were taken gets a pid above them; the spawn path runs the same steps."""
    start_kernel(transport).shutdown()
    return start_kernel(transport)


def _kernel_on_pid(transport: SshTransport, pid: int) -> KernelHandle | None:
    """Reboot the host, then take pids up to just below ``pid`` and start a kernel: one whose
    runner got ``pid``, or ``None`` (another process took it)."""
    _reboot(transport)
    start_kernel(transport).shutdown()  # a kernel server runs again (server path)
    before = _shell_pid(transport)
    probe = _next_start(transport)
    gap = (probe.runner_pid or 0) - before  # pids a start takes before its runner's
    probe.shutdown()
    while (last := _shell_pid(transport)) < pid - gap:
        pass
    if last != pid - gap:
        return None
    k = _next_start(transport)
    if k.runner_pid == pid:
        return k
    k.shutdown()
    return None


def test_a_reused_runner_pid_is_not_taken_for_the_runner(own_sshd, start):
    while _shell_pid(own_sshd) < FIRST_PID:  # room below the runner's pid for the kernels after the reboot
        pass
    start(own_sshd).shutdown()  # (the server path's spare was forked before: see _next_start)
    a = start(own_sshd, reconnect_timeout=RECONNECT_S)
    assert a.execute("x = 1").status == "ok"
    pid = a.runner_pid
    c = None
    for _ in range(TRIES):
        c = _kernel_on_pid(own_sshd, pid)
        if c is not None:
            break
    assert c is not None, f"no kernel got the old runner pid {pid} in {TRIES} reboots"
    try:
        assert c.execute("y = 1").status == "ok"

        began = time.monotonic()
        lost = a.execute("x")
        took = time.monotonic() - began
        after_c = c.execute("y")
    finally:
        c.shutdown()

    assert (after_c.status, after_c.value) == ("ok", "1"), after_c.summary()  # the other kernel is untouched
    assert lost.status == "died" and lost.kernel.state_lost, lost.summary()
    assert "still alive" not in lost.kernel.note, lost.kernel.note
    assert took < SETTLE_S, (took, lost.summary())
