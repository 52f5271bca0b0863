"""Found by the breaker helper on other interpreters (2026-12-06): a filecell kernel started with
its own ``python=`` through a backend where ``python3`` is missing (a container whose Python is only
``/opt/py/bin/python3``) ran, but its scans ran the transport's ``python3``:
``kernel_processes`` said ``[]`` while the kernel ran (the scan's ``exec: python3: not found`` was
read as "no process": the post-mortem checks would call a live kernel gone), and every leak
snapshot raised "the kernel scan ... did not complete (exit status 127)". The scans now run with
the interpreter a launch found a kernel's ``python=`` runs until the transport's own has run, and a
process scan that fails says so.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport
from pytest_hermes_kernel.transports.filecell.backends import DockerExecBackend
from tests.regressions.conftest import PYTHON_ELSEWHERE

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.fixture(scope="module")
def backend_without_python3(image_without_python3: str) -> Iterator[DockerExecBackend]:
    """A container of the image, removed after the module (after each test's leak check looked in it)."""
    import docker

    from pytest_hermes_kernel.containers.labels import run_labels

    client = docker.from_env()
    container = client.containers.run(image_without_python3, detach=True, user="hermes", network_mode="none",
                                      labels=run_labels(run_id=f"test-{uuid.uuid4().hex}", worker_id="filecell",
                                                        role="docker-kernel-host"))
    try:
        yield DockerExecBackend(container.id, client=client)
    finally:
        container.remove(force=True)
        client.close()


def test_its_processes_are_listed_and_the_leak_scan_runs(backend_without_python3: DockerExecBackend) -> None:
    transport = make_transport("filecell", backend=backend_without_python3)
    try:
        with start_kernel(transport, python=PYTHON_ELSEWHERE, start_timeout=60) as kernel:
            assert kernel.execute("import sys; sys.executable").value == repr(PYTHON_ELSEWHERE)

            listed = transport.kernel_processes(kernel.kernel_id, transport.locator(kernel.launched))
            assert len(listed) >= 2, listed  # its runner and its worker
            scanned = transport.leak_snapshot(os.getpid())["remote kernel process"]
            assert [d for d in scanned.values() if kernel.kernel_id in d], scanned
        assert transport.leak_snapshot(os.getpid())["remote kernel process"] == {}
    finally:
        transport.close()
