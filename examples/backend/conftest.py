"""Run the backend contract suite against my backend."""

import os
import signal
import subprocess
import tempfile

import pytest

from pytest_hermes_kernel.transports import FileCellTransport


class SubprocessSandbox:
    """Stands for your backend: it runs a command to completion, returns (exit code, output)."""

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        with tempfile.TemporaryDirectory() as tmp:  # 0700
            script, output = os.path.join(tmp, "cmd.sh"), os.path.join(tmp, "out")
            with open(script, "w", encoding="utf-8") as fh:
                fh.write(cmd)  # a file, not argv: `ps` shows argv, and a launch carries the kernel's env
            with open(output, "wb") as out:  # a background process may hold it: the call does not wait
                proc = subprocess.Popen(["sh", script], stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True)
            try:
                code = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the whole command, not only its shell
                proc.wait()
                return 124, ""  # the protocol's status for a command ended at its timeout
            with open(output, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        return (128 - code if code < 0 else code), text  # a death by signal N is 128 + N, never -N


@pytest.fixture
def hermes_transport():
    root = tempfile.mkdtemp(prefix="hermes-backend-")  # kernel dirs go here (a short path: they hold sockets)
    transport = FileCellTransport(SubprocessSandbox(), root=root)
    yield transport
    transport.close()
    os.rmdir(root)  # fails if a kernel dir was left: the backend leaked one
