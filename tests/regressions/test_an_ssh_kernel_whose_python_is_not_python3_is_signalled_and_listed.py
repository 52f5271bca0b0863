"""Found by the breaker helper on other interpreters (2026-12-06): on an ssh host without
``python3`` (its Python only at ``/opt/py/bin/python3``), a kernel started with that ``python=``
ran, its leak scan found it (``test_an_ssh_kernels_own_python_scans_a_host_without_python3.py``),
but ``signal_pid`` (how ``hermes_kernel_sigkill`` kills the worker) raised ``ProcessLookupError:
no process N of ours on the ssh host`` on both paths, and ``kernel_processes`` (``hermes-kernel
ls``/``sweep --kept``, the post-mortem checks) on the spawn path raised ``TransportLostError: the
scan for kernel ...'s processes on the ssh host failed (exit status 127)``: their scripts ran the
transport's ``python3``. Every helper script now runs with a kernel's interpreter where the
transport's is missing (``transports/script_pythons.py``).
"""

from __future__ import annotations

import signal

import pytest

from pytest_hermes_kernel import start_kernel
from tests.odd_hosts import odd_ssh_host

pytestmark = pytest.mark.usefixtures("docker_ready")

OWN = "/opt/py/bin/python3"
ELSEWHERE = ("mkdir -p /opt/py/bin && mv /usr/bin/python3.11 /opt/py/bin/ && rm /usr/bin/python3 && "
             "ln -s python3.11 /opt/py/bin/python3")


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_its_processes_are_listed_and_its_worker_signalled(tmp_path, server: bool) -> None:
    with odd_ssh_host(tmp_path, setup=ELSEWHERE) as host:
        transport = host.transport(server=server)
        try:
            kernel = start_kernel(transport, python=OWN)
            try:
                assert kernel.execute("x = 1; import sys; sys.executable").value == repr(OWN)
                listed = transport.kernel_processes(kernel.kernel_id, transport.locator(kernel.launched))
                assert len(listed) >= 2, listed  # its runner and its worker

                transport.signal_pid(kernel.launched, kernel.worker_pid, signal.SIGKILL)
                after = kernel.execute("x")
                assert after.kernel.state_lost and "signal 9" in after.kernel.note, after.summary()
            finally:
                kernel.shutdown()
        finally:
            transport.close()
