"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): an ssh login whose rc file sets a umask that
takes the owner's write bit (``umask 0277`` in ``~/.bashrc``: sshd runs the sftp subsystem through
the login shell, so SFTP's ``mkdir`` gets it too) could not get a kernel: ``~/.hermes-kernels``
was made 0500, and the start failed "could not prepare .../<id> over sftp: [Errno 13] Permission
denied. Hint: ... is it read-only, or the host's disk full?". The 0500 root stayed: with the
umask put back, every later start on that host failed the same way until the user found the dir
and changed its mode by hand. The local transport's dirs are 0700 whatever the umask (README).

On the kernel-server path the server's own fork of the kernel failed the same way (its
``os.mkdir(kdir, 0o700)`` took the umask too) and every start fell back to a spawn of its own: a
kernel, but by the slow path.

Now the dirs the ssh transport and its kernel server make are 0700 whatever the login's umask (set
after the mkdir), and the kernel starts, on both paths, the server's forked by the server.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from tests.support import container_output

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_kernel_starts_under_a_umask_that_takes_the_owners_write_bit(own_sshd):
    own_sshd.connection()  # the sshd container runs, no kernel dir made yet
    client, cid = own_sshd.sshd.docker, own_sshd.sshd_container_id
    container_output(client, cid, ["sh", "-c", "rm -rf /home/hermes/.hermes-kernels && "
                                   "sed -i '1i umask 0277' /home/hermes/.bashrc"])

    kernel = start_kernel(own_sshd)
    try:
        forked_by = kernel.launched.extra.get("server")
        assert (forked_by is not None) == (own_sshd.servers is not None), kernel.launched.label
        assert kernel.execute("6 * 7").value == "42"
    finally:
        kernel.shutdown()
    modes = container_output(client, cid, ["stat", "-c", "%a %n", "/home/hermes/.hermes-kernels"])
    assert modes.split()[0] == "700", modes
