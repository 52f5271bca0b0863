"""Seen: ``SshTransport(python="python9")`` on a host without that interpreter. The start failed
with the right error ("did not report ready (exit status 127) ... 'python9' was not found on the
ssh host's PATH"), but before it the failed launch's cleanup logged "kernel ... (failed launch):
could not end all its processes: b''" (twice on the server path: once for the server, once for
the spawn path it fell back to), printed on stderr by Python's last-resort handler in a script:
the cleanup runs its kill script with that same missing interpreter, and nothing of the kernel
could have started with it.

Now a cleanup whose interpreter is missing, as the kernel's is, logs nothing above DEBUG. Both
start paths.
"""

from __future__ import annotations

import logging

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from tests.support import transport_of_its_own

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_missing_interpreter_is_said_once(server, caplog):
    with transport_of_its_own("ssh", server=server, python="python9") as transport:
        caplog.set_level(logging.WARNING, logger="pytest_hermes_kernel")
        with pytest.raises(KernelStartError, match="'python9' was not found on the ssh host's PATH"):
            start_kernel(transport)

    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [], warned
