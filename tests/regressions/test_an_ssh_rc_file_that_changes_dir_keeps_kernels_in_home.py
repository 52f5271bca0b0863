"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): an ssh login whose ``~/.bashrc`` changes
dir (``cd /tmp``, ``cd ~/work``: common on build hosts) moved where the kit kept its kernels. The
home was read as the SFTP session's working dir, and sshd runs the sftp subsystem through the
login shell, so "home" was wherever the rc file went:

* ``cd /tmp``: ``/tmp/.hermes-kernels`` was made, then refused: "refusing to keep kernels in
  /tmp/.hermes-kernels on the ssh host: it is owned by uid 1000, not 0. Hint: another user may
  have made it first; remove it on the host" (it was the kit's own, just made), and it stayed in
  the world-writable ``/tmp``; no kernel could start;
* ``cd ~/work``: spawned kernels lived in ``~/work/.hermes-kernels`` and the kernel server's dir
  too, while the server's kernels went to ``~/.hermes-kernels`` (its home is ``~``): two roots.

Now the home is the login's: ``~<user>`` by OpenSSH's ``expand-path@openssh.com`` (a bare ``~``
is the session's dir there), else its ``$HOME`` (one exec), whatever dir the rc file goes to:
kernels start in ``~/.hermes-kernels`` on both paths, and nothing is made where the rc file went.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports.ssh.rundir import login_home
from tests.support import container_output

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.mark.parametrize("elsewhere", ["/tmp", "~/work"])
def test_a_kernel_starts_in_the_home_whatever_dir_the_rc_file_goes_to(own_sshd, elsewhere):
    own_sshd.connection()  # the sshd container runs, no kernel dir made yet
    client, cid = own_sshd.sshd.docker, own_sshd.sshd_container_id
    container_output(client, cid, ["sh", "-c", "install -d -o hermes -g hermes /home/hermes/work && "
                                   f"sed -i '1i cd {elsewhere}' /home/hermes/.bashrc"])

    kernel = start_kernel(own_sshd)
    try:
        where = kernel.execute("import os; os.getcwd()").value
    finally:
        kernel.shutdown()
    assert where.startswith("'/home/hermes/.hermes-kernels/"), where
    made = container_output(client, cid, ["sh", "-c", "ls -d /tmp/.hermes-kernels /home/hermes/work/.hermes-kernels "
                                          "2>/dev/null; true"])
    assert made == "", f"made where the rc file went: {made}"


class _SessionInTmp:
    """An SFTP session whose dir an rc file moved to ``/tmp``; ``homes``: what expand-path answers."""

    def __init__(self, homes: dict[str, str] | None = None) -> None:
        self.homes = homes

    def _request(self, _kind, name, path):
        from paramiko import Message
        from paramiko.sftp import CMD_NAME

        if self.homes is None or name != "expand-path@openssh.com":
            raise OSError("Operation unsupported")
        answer = Message()
        answer.add_int(1)
        answer.add_string(self.homes[path])
        return CMD_NAME, Message(answer.asbytes())

    def normalize(self, path):
        return "/tmp" if path == "." else path


class _Login:
    """A connection as user ``bob``; its login shell says ``$HOME`` is ``home``."""

    def __init__(self, home: bytes, code: int = 0) -> None:
        self.home, self.code, self.execs = home, code, 0
        self.transport = type("T", (), {"get_username": staticmethod(lambda: "bob")})()

    def run(self, command, timeout):
        assert "$HOME" in command, command
        self.execs += 1
        return self.code, self.home, b""


def test_the_home_is_the_users_passwd_home_else_its_home_variable_else_the_sessions_dir():
    login = _Login(b"/elsewhere")
    assert login_home(login, _SessionInTmp({"~bob": "/home/bob"})) == "/home/bob" and login.execs == 0
    assert login_home(_Login(b"/home/bob"), _SessionInTmp()) == "/home/bob"  # an sshd before OpenSSH 8.7
    assert login_home(_Login(b"", code=1), _SessionInTmp()) == "/tmp"  # nothing better known: as before
