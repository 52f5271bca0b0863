"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): on an ssh host without the interpreter the
transport was given (``python3`` not on the non-login PATH, a ``python=`` typo), each start failed
with the right error, and left the kernel server's dir behind: ``~/.hermes-kernels/server-<random>``
holding the runner file, about 200 KiB a start (3 starts: 3 dirs, 628 KiB). The sweep of dead
servers' dirs is done by the next server that starts there, and with no interpreter none ever did.

Now a server that ended before it said hello has its dir removed at once; nothing of the three
starts stays, on either path.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import make_transport
from tests.support import container_output

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_starts_with_a_missing_interpreter_leave_nothing_on_the_host(own_sshd):
    own_sshd.connection()  # the sshd container runs
    client, cid = own_sshd.sshd.docker, own_sshd.sshd_container_id
    for _ in range(3):
        transport = make_transport("ssh", run_id=own_sshd.run_id, server=own_sshd.servers is not None, python="python9")
        try:
            with pytest.raises(KernelStartError, match="'python9' was not found"):
                start_kernel(transport)
        finally:
            transport.close()
    left = container_output(client, cid, ["sh", "-c", "find /home/hermes/.hermes-kernels -mindepth 1 2>/dev/null; true"])
    assert left == "", f"left on the host by 3 failed starts:\n{left}"
