"""Seen: ``start_kernel(SshTransport(target=...))`` on a port where something other than sshd
answers (an HTTP server) raised the kit's clear ``KernelStartError: ... Error reading SSH protocol
banner``, and also printed paramiko's own ``Exception (client): Error reading SSH protocol banner``
and two chained tracebacks from deep inside paramiko on stderr (its transport thread logs them at
ERROR; with no logging set up, Python's last-resort handler printed them).

Now the kit's connections log on their own channel from the first byte, with a ``NullHandler``
(as a library should): the error says it once; an application that sets up logging still gets
paramiko's lines.
"""

from __future__ import annotations

import subprocess
import sys

from tests.support import greeting_port

SCRIPT = """
import sys
from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports.ssh.transport import SshTransport
transport = SshTransport(target="hermes@127.0.0.1:" + sys.argv[1], host_key_policy="auto-add")
try:
    start_kernel(transport)
except KernelStartError as exc:
    print(exc)
finally:
    transport.close()
"""


def test_a_port_that_is_no_sshd_is_reported_once_without_a_traceback():
    with greeting_port(b"HTTP/1.0 400 Bad Request\r\n\r\n") as port:  # an HTTP server's answer to a line it cannot read
        done = subprocess.run([sys.executable, "-c", SCRIPT, str(port)], capture_output=True, text=True, timeout=60)

    assert "Error reading SSH protocol banner" in done.stdout, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "Exception (client)" not in done.stderr, done.stderr
