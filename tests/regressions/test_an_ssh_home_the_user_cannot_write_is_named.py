"""Seen (a non-root breaker helper, 2026-12-05): an ssh login user whose home it may not write (a
root-owned home, as service accounts and some shared hosts have) could not get a kernel, and the
start error named neither the dir nor the cause: "ssh transport: could not prepare the kernel dir
on bob@127.0.0.1:32863 over sftp: [Errno 2] No such file". The ``mkdir`` of ``~/.hermes-kernels``
had been refused (Permission denied), read as "it exists", and the check that followed found no
such file. Now the start error names ``<home>/.hermes-kernels`` and the refusal."""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.support import container_output

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_home_the_ssh_user_cannot_write_is_named_with_its_refusal(own_sshd):
    own_sshd.connection()  # its sshd container up, no kernel (nor kernel dir) made yet
    client, cid = own_sshd.sshd.docker, own_sshd.sshd_container_id
    container_output(client, cid, ["sh", "-c", "rm -rf /home/hermes/.hermes-kernels && chown root:root /home/hermes"
                                   " && chmod 0755 /home/hermes"])
    with pytest.raises(KernelStartError) as caught:
        start_kernel(own_sshd)

    message = str(caught.value)
    assert "/home/hermes/.hermes-kernels" in message and str(own_sshd.current_connection.target) in message, message
    assert "Permission denied" in message and "No such file" not in message, message
