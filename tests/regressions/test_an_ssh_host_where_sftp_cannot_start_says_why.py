"""Seen (a breaker helper, odd ssh hosts, 2026-12-06): on an ssh host that took the key but where
SFTP could not start, the start error blamed the connection: "ssh transport: sftp to ... failed:
EOF during negotiation" (or "Channel closed.") with "Hint: is the host up and the key accepted?",
when the host was up and the key accepted. Real hosts where that happens:

* an rc file that ends non-interactive shells (``exit`` or ``exec`` at the top of ``~/.bashrc``):
  sshd runs every command, SFTP's too, through the login shell;
* a login shell that cannot run the sftp server by its path (``rbash``: "restricted: cannot
  specify `/' in command names", said on a stderr no one read);
* a ``ForceCommand`` in sshd_config (``/bin/false``; one that prints a notice was called a chatty
  login shell, "an echo at the top of ~/.bashrc");
* no sftp subsystem in sshd_config (hardened hosts);
* a login whose password expired (``chage -d 0``: sshd wants a new one before any command, and
  says "Password change required but no TTY available" on a stderr no one read; the hint then
  named shells and rc files only);
* a login shell that runs no command (``/usr/sbin/nologin``: a service account; its "This account
  is currently not available." was taken for a chatty shell at first, and the hint then named
  only ForceCommand and rc files).

Now each says what stopped SFTP and what to change, on both start paths.
"""

from __future__ import annotations

import pytest

from tests.odd_hosts import odd_ssh_host
from tests.support import start_error

pytestmark = pytest.mark.usefixtures("docker_ready")

CONF = "/etc/ssh/sshd_config.d/00-hermes.conf"
HOSTS = {  # host setup (as root, before sshd starts) -> what the start error must say
    "rc-exit": ("sed -i '1i exit 0' /home/hermes/.bashrc", ["runs no command as given", "exit status 0", "rc files"]),
    "rbash": ("usermod -s /bin/rbash hermes", ["ended before it answered", "exit status 1", "cannot specify",
                                             "chsh -s /bin/bash"]),
    "force-false": (f"echo 'ForceCommand /bin/false' >> {CONF}", ["runs no command as given", "exit status 1",
                                                                 "ForceCommand"]),
    "force-notice": (f"echo 'ForceCommand echo This account is for deployments only' >> {CONF}",
                     ["runs no command as given", "This account is for deployments only", "ForceCommand"]),
    "nologin": ("usermod -s /usr/sbin/nologin hermes", ["runs no command as given", "currently not available",
                                                        "nologin"]),
    "password-expired": ("chage -d 0 hermes", ["runs no command as given", "Password change required",
                                               "chage -l"]),
    "no-sftp": ("sed -i 's/^Subsystem/#Subsystem/' /etc/ssh/sshd_config", ["refused the sftp subsystem",
                                                                        "Subsystem sftp internal-sftp"]),
}


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("host", list(HOSTS))
def test_a_host_where_sftp_cannot_start_says_what_stopped_it(tmp_path, host, server):
    setup, said = HOSTS[host]
    with odd_ssh_host(tmp_path, setup=setup) as odd:
        message = start_error(odd.transport(server=server))
    assert "is the host up and the key accepted" not in message, message
    assert "Hint:" in message and all(words in message for words in said), message
