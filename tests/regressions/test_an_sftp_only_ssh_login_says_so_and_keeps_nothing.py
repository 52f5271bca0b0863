"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): an sftp-only login (``ForceCommand
internal-sftp`` in sshd_config, common for accounts that may only move files) got, on each start:

* "the kernel runner ... did not report ready (exit status 1): stdout b'This service allows sftp
  connections only.\\n' ... Hint: 'python3' ran but the runner did not start" (python3 never ran);
* warnings on stderr: "could not remove .../server-... over ssh (exit status 1)", "(failed
  launch): could not end all its processes: b'This service allows sftp connections only.\\n'";
* the kernel dir and the kernel server's dir left behind with their runner files (SFTP had made
  them; their removal was an ``rm`` exec, which the host does not run): 3 dirs after one start on
  each path.

Now the start error says the host runs no command as given and names ``internal-sftp``; the dirs
are removed over SFTP when ``rm`` cannot run, and nothing above DEBUG is logged, on both paths.
"""

from __future__ import annotations

import logging

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.odd_hosts import odd_ssh_host

pytestmark = pytest.mark.usefixtures("docker_ready")

CONF = "/etc/ssh/sshd_config.d/00-hermes.conf"


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_an_sftp_only_login_is_named_and_keeps_nothing(tmp_path, caplog, server):
    with odd_ssh_host(tmp_path, setup=f"echo 'ForceCommand internal-sftp' >> {CONF}") as host:
        transport = host.transport(server=server)
        caplog.set_level(logging.WARNING, logger="pytest_hermes_kernel")
        try:
            with pytest.raises(KernelStartError) as caught:
                start_kernel(transport)
        finally:
            transport.close()
        left = host.run("find /home/hermes/.hermes-kernels -mindepth 1 2>/dev/null; true")
    message = str(caught.value)
    assert "runs no command as given" in message and "internal-sftp" in message, message
    assert "'python3' ran" not in message, message
    assert left == "", f"left on the host:\n{left}"
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [], warned
