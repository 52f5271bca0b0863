"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): an ssh login at its process limit (``nproc``
in /etc/security/limits.conf, as shared hosts set; reached by its kernels or other processes):

* where sshd could not fork the session at all, the start error said "the host's sshd refused the
  sftp subsystem (none in its sshd_config?)" with a hint to enable SFTP, which was on;
* where the runner's own fork failed, it showed a ``BlockingIOError`` traceback with "Hint:
  'python3' ran but the runner did not start; its stderr above says why".

Now both name the login's process limit (ulimit -u, nproc) and what to do.
"""

from __future__ import annotations

import pytest

from tests.odd_hosts import odd_ssh_host
from tests.support import start_error

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.mark.parametrize(("nproc", "server"), [(1, True), (1, False), (2, False)],
                         ids=["no-session-server", "no-session-spawn", "no-fork-spawn"])
def test_a_login_at_its_process_limit_is_told_so(tmp_path, nproc, server):
    with odd_ssh_host(tmp_path, setup=f"echo 'hermes hard nproc {nproc}' >> /etc/security/limits.conf") as host:
        message = start_error(host.transport(server=server))
    assert "process limit (ulimit -u" in message and "Subsystem sftp" not in message, message
