"""Run the backend contract suite against my backend."""

import os
import subprocess
import tempfile

import pytest

from pytest_hermes_kernel.transports import FileCellTransport


class SubprocessSandbox:
    """Stands for your backend: it runs a command to completion, returns (exit code, output)."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        try:
            done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return 124, ""  # the protocol's status for a command ended at its timeout
        code = done.returncode  # the shell's convention: a death by signal N is 128 + N, never -N
        return (128 - code if code < 0 else code), done.stdout + done.stderr


@pytest.fixture
def hermes_transport():
    root = tempfile.mkdtemp(prefix="hermes-backend-")  # kernel dirs go here (a short path: they hold sockets)
    transport = FileCellTransport(SubprocessSandbox(), root=root)
    yield transport
    transport.close()
    os.rmdir(root)  # fails if a kernel dir was left: the backend leaked one
