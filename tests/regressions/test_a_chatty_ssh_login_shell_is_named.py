"""Seen: an ssh host whose login shell prints something for every session (``echo Welcome`` at
the top of ``~/.bashrc``, before its interactive guard: common on build hosts). sshd runs every
command, SFTP included, through that shell, so the SFTP stream began with "Welcome ..." and
``start_kernel`` raised paramiko's bare ``SFTPError: Garbage packet received``: no
``KernelStartError``, no host, no hint (OpenSSH's own ``sftp`` says "Ensure the remote shell
produces no output for non-interactive sessions").

Now the start fails with a ``KernelStartError`` that names the host, quotes what the shell
printed, and says what to change. Both start paths (the server path falls back to the spawn path).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.support import container_output

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_login_shell_that_prints_is_named_in_the_start_error(own_sshd):
    own_sshd.connection()  # the sshd container runs
    container_output(own_sshd.sshd.docker, own_sshd.sshd_container_id,
                     ["sed", "-i", "1i echo Welcome to the build host", "/home/hermes/.bashrc"])

    with pytest.raises(KernelStartError) as caught:
        start_kernel(own_sshd)

    message = str(caught.value)
    assert str(own_sshd.current_connection.target) in message, message
    assert "Welcome to the build host" in message, message
    assert "non-interactive" in message, message
