"""Seen: the kernel server on an ssh host was SIGKILLed (the OOM killer's pick, a ``kill -9``; a
host reboot ends it the same way). Its kernels re-attached and the next start ran a new server,
but the dead server's dir ``~/.hermes-kernels/server-<random>`` (the runner file, its log) stayed
on the host for good: only a server that exits removes its own dir, and nothing else looked at
it (not the leak check, not a sweep). On a target host each such death left one more.

Now a server that starts removes its siblings that no process works in any more (a dir made in
the last minute is left alone: another transport may be about to start its server there); a
live server's dir stays, however old.
"""

from __future__ import annotations

import shlex
import signal

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
from tests.support import container_output, transport_of_its_own, wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")


def _exists(transport: SshTransport, path: str) -> bool:
    code, _, _ = transport.connection().run(f"test -e {shlex.quote(path)}")
    return code == 0


def test_a_dead_servers_dir_is_removed_by_the_next_server():
    with transport_of_its_own("ssh", server=True) as transport:
        assert isinstance(transport, SshTransport)
        with start_kernel(transport) as k:
            assert k.execute("x = 1").status == "ok"
            server = k.launched.extra["server"]
            sdir = server.hello["home"] + "/.hermes-kernels/" + _server_dir_name(transport, server.pid)
            transport.signal_pid(None, server.pid, signal.SIGKILL)
            wait_until(lambda: not server.usable, 10.0, interval=0.1, what="the host to see its server gone")
            assert _exists(transport, sdir)
            container_output(transport.sshd.docker, transport.sshd_container_id,
                             ["touch", "-d", "2 minutes ago", sdir])  # not one another transport is making

            with start_kernel(transport) as fresh:  # on a new server
                assert fresh.launched.extra["server"].pid != server.pid
                wait_until(lambda: not _exists(transport, sdir), 5.0, interval=0.2,
                           what=f"the dead server's dir {sdir} to be removed")
                assert k.execute("x").value == "1"  # its kernels live on (re-attached)

                live = fresh.launched.extra["server"]
                live_dir = sdir.rsplit("/", 1)[0] + "/" + _server_dir_name(transport, live.pid)
                container_output(transport.sshd.docker, transport.sshd_container_id,
                                 ["touch", "-d", "2 minutes ago", live_dir])
                with start_kernel(transport, python="/usr/bin/python3") as other:  # a server of its own
                    assert other.launched.extra["server"].pid not in (live.pid, server.pid)
                assert _exists(transport, live_dir)  # its server works in it
                with start_kernel(transport) as again:  # forked by the live server from its runner file
                    assert again.launched.extra["server"] is live and again.execute("2").value == "2"


def _server_dir_name(transport: SshTransport, pid: int) -> str:
    code, out, _ = transport.connection().run(f"readlink /proc/{pid}/cwd")
    assert code == 0, out
    return out.decode().strip().rsplit("/", 1)[-1]
