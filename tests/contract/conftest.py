"""The contract suite runs once per transport named in ``PYTEST_HERMES_TRANSPORTS``.

``PYTEST_HERMES_TRANSPORTS`` is a comma-separated list (default ``local``). Every test asks for
``kernel_factory(**options)``, which hands a started :class:`KernelHandle` on the test's
transport; kernels are shut down (and checked gone) after the test. ``kernel_factory`` is built
on ``hermes_kernel_factory``, the plugin's fixture.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle, start_kernel
from tests.helpers import pids_with_kernel_id, wait_until


def _transports() -> list[str]:
    names = [n.strip() for n in os.environ.get("PYTEST_HERMES_TRANSPORTS", "local").split(",")]
    return [n for n in names if n] or ["local"]


# TEMPORARY until the plugin provides it: the plugin's ``hermes_kernel_factory(**options)``
# replaces this fixture (a conftest fixture of the same name would shadow the plugin's, so
# delete this one when the plugin lands).
@pytest.fixture
def hermes_kernel_factory() -> Iterator[Callable[..., KernelHandle]]:
    made: list[KernelHandle] = []

    def factory(transport: str = "local", **options: Any) -> KernelHandle:
        handle = start_kernel(transport, **options)
        made.append(handle)
        return handle

    yield factory
    for handle in made:
        handle.shutdown()
    for handle in made:  # nothing of the kernel may outlive the test
        wait_until(lambda h=handle: not pids_with_kernel_id(h.kernel_id), 5.0,
                   what=f"every process of kernel {handle.kernel_id} to end after shutdown")


@pytest.fixture(params=_transports())
def kernel_factory(request: pytest.FixtureRequest,
                   hermes_kernel_factory: Callable[..., KernelHandle]) -> Callable[..., KernelHandle]:
    """``kernel_factory(**options) -> KernelHandle`` on the transport of this parametrization."""
    transport = request.param

    def make(**options: Any) -> KernelHandle:
        return hermes_kernel_factory(transport=transport, **options)

    return make


@pytest.fixture
def kernel(kernel_factory: Callable[..., KernelHandle]) -> KernelHandle:
    """A kernel with default options."""
    return kernel_factory()
