"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): on an ssh host where no kernel server could
start (SFTP stopped by an rc file that exits, or by a ForceCommand that prints a notice), the start
failed with its error, and before it the kernel-server path logged "kernel ... (failed launch):
could not end all its processes: b''" (b'This account is for deployments only\\n' for the notice),
shown on stderr by Python's last-resort handler in a script: the cleanup of a kernel no server was
there to fork ran its kill script on a host that runs no command, and read the silence as a kernel
it could not end.

Now a launch that no kernel server was asked for ends nothing, and logs nothing above DEBUG; the
start error is the same.
"""

from __future__ import annotations

import logging

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.odd_hosts import odd_ssh_host

pytestmark = pytest.mark.usefixtures("docker_ready")

CONF = "/etc/ssh/sshd_config.d/00-hermes.conf"


@pytest.mark.parametrize("setup", ["sed -i '1i exit 0' /home/hermes/.bashrc",
                                   f"echo 'ForceCommand echo This account is for deployments only' >> {CONF}"],
                         ids=["rc-exit", "force-notice"])
def test_no_server_could_start_and_nothing_is_warned_of(tmp_path, caplog, setup):
    with odd_ssh_host(tmp_path, setup=setup) as host:
        transport = host.transport(server=True)
        caplog.set_level(logging.WARNING, logger="pytest_hermes_kernel")
        try:
            with pytest.raises(KernelStartError, match="runs no command as given"):
                start_kernel(transport)
        finally:
            transport.close()

    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [], warned
