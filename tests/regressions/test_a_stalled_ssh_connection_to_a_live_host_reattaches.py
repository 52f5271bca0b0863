"""Seen: the one TCP connection to the ssh host went silent while the host itself answered (a NAT
or stateful firewall that dropped the idle flow, a frozen per-connection sshd: here SIGSTOP of
``sshd: hermes@notty``). The keepalives gave up after 9 s and the running cell came back
``died``, ``transport_lost``, its state lost, without one try of a new connection: a connection
whose keepalives went unanswered counted as a silent *host*, and the re-attach was refused at
once. The runner ran on, fine, and a new connection reached it at once; the next cell replaced it
(``NameError`` for what the kernel held).

Now the first look after the keepalives gave up tries one short new connection at once: a host
that answers is re-attached (the cell's result arrives, state kept, ``reconnected``); a host that
does not is silent as before. Both start paths.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import CellStarted, container_output, run_in_thread

pytestmark = pytest.mark.usefixtures("docker_ready")

#: own_sshd's keepalives: the stalled connection is given up after 3 s, not the default 9 s.
SSHD_OPTIONS = {"keepalive_interval": 1.0, "keepalive_missed": 3}


def _freeze_the_connection(transport: SshTransport) -> str:
    """SIGSTOP the sshd process that serves the transport's connection (the host still answers
    new ones); its pid."""
    code, out, _ = transport.connection().run("echo $PPID")  # the shell's parent: sshd: hermes@notty
    assert code == 0, out
    pid = out.decode().strip()
    container_output(transport.sshd.docker, transport.sshd_container_id, ["kill", "-STOP", pid])
    return pid


def test_a_cell_over_a_stalled_connection_is_reattached_with_its_state(own_sshd, start):
    started = CellStarted()
    k = start(own_sshd, tools=started.tools())
    assert k.execute("x = 1").status == "ok"
    fut = run_in_thread(k, started.CODE + "import time\ntime.sleep(2)\nx", timeout=60)
    started.wait()
    pid = _freeze_the_connection(own_sshd)
    try:
        result = fut.result(timeout=40)
    finally:
        container_output(own_sshd.sshd.docker, own_sshd.sshd_container_id, ["kill", "-CONT", pid])

    assert (result.status, result.value) == ("ok", "1"), result.summary()
    assert result.kernel.reconnected and not result.kernel.state_lost, result.summary()
    assert k.execute("x").value == "1"
