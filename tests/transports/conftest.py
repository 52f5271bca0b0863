"""Fixtures for the docker and ssh transport tests.

Every test here skips, with the reason ``docker_status()`` gives, where no docker engine answers
(the ssh tests run their sshd in a container too). Kernels made through ``start`` are shut down
after the test; containers a test makes for itself are removed by the transport it closes.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle, start_kernel
from pytest_hermes_kernel.kernel.results import CellResult
from pytest_hermes_kernel.kernel.contract import Transport


@pytest.fixture(scope="session")
def docker_ready() -> None:
    from pytest_hermes_kernel.containers.images import docker_status

    ok, why = docker_status()
    if not ok:
        pytest.skip(f"docker engine not reachable: {why}")


@pytest.fixture
def start() -> Iterator[Callable[..., KernelHandle]]:
    """``start(transport, **kernel_options) -> KernelHandle``; every kernel is shut down after the test."""
    made: list[KernelHandle] = []

    def factory(transport: Transport | str, **options: Any) -> KernelHandle:
        handle = start_kernel(transport, **options)
        made.append(handle)
        return handle

    yield factory
    for handle in made:
        handle.shutdown()


def run_in_thread(kernel: KernelHandle, code: str, **kwargs: Any) -> Future[CellResult]:
    """Start ``kernel.execute(code)`` in a thread; the future resolves with its result."""
    fut: Future[CellResult] = Future()

    def run() -> None:
        try:
            fut.set_result(kernel.execute(code, **kwargs))
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            fut.set_exception(exc)

    threading.Thread(target=run, name="test-cell", daemon=True).start()
    return fut


def wait_running(kernel: KernelHandle, timeout: float = 10.0) -> None:
    """Wait until the kernel has a cell in flight (its id is set when the request is sent)."""
    deadline = time.monotonic() + timeout
    while kernel._running_rid is None:
        assert time.monotonic() < deadline, "the cell did not start"
        time.sleep(0.01)
