"""A worked example: a new execute-only backend checked by the whole contract suite.

``SubprocessSandbox`` stands for any environment that can only run a command to completion and
return its exit code and output (a sandbox API, a CI runner, a remote-exec service). Wrapped in
``FileCellTransport`` it gets persistent kernels; overriding the ``hermes_transport`` fixture
here makes every test in this folder (the contract suite, imported in test_contract.py) run
against it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport


class SubprocessSandbox:
    """The whole backend: one method, ``execute(cmd, timeout) -> (exit_code, output)``."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        try:
            done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=timeout,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            return 124, ""
        return done.returncode, done.stdout + done.stderr


@pytest.fixture
def hermes_transport() -> Iterator[FileCellTransport]:
    transport = FileCellTransport(SubprocessSandbox(), root="/tmp/hermes-example-backend")
    yield transport
    transport.close()
