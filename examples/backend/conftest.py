"""Run the backend contract suite against my backend."""

import subprocess

import pytest

from pytest_hermes_kernel.transports import FileCellTransport


class SubprocessSandbox:
    """Stands for your backend: it runs a command to completion, returns (exit code, output)."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        try:
            done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return 124, ""
        return done.returncode, done.stdout + done.stderr


@pytest.fixture
def hermes_transport():
    transport = FileCellTransport(SubprocessSandbox(), root="/tmp/hermes-example-backend")
    yield transport
    transport.close()
