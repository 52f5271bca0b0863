"""The contract suite: one set of tests that every transport must pass.

Every test asks for ``kernel_factory(**options)`` (an alias of the plugin's
``hermes_kernel_factory``), which hands a started :class:`KernelHandle` on the test's transport
and shuts it down after the test. The transport matrix comes from the plugin:
``--hermes-transport local,docker,ssh`` (or ``PYTEST_HERMES_TRANSPORT``), one run per name.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle, start_kernel
from tests.helpers import pids_with_kernel_id, wait_until

_PLUGIN_FIXTURES = importlib.util.find_spec("pytest_hermes_kernel.plugin.fixtures") is not None

if not _PLUGIN_FIXTURES:
    # TEMPORARY until the plugin provides it: a stand-in for the plugin's ``hermes_transport``
    # and ``hermes_kernel_factory(**options)`` (same names, same signatures), parametrized over
    # PYTEST_HERMES_TRANSPORT. It is only defined when the plugin's fixtures module is absent.
    def _transports() -> list[str]:
        names = [n.strip() for n in os.environ.get("PYTEST_HERMES_TRANSPORT", "local").split(",")]
        return [n for n in names if n] or ["local"]

    @pytest.fixture(params=_transports())
    def hermes_transport(request: pytest.FixtureRequest) -> str:
        return request.param

    @pytest.fixture
    def hermes_kernel_factory(hermes_transport: str) -> Iterator[Callable[..., KernelHandle]]:
        made: list[KernelHandle] = []

        def factory(**options: Any) -> KernelHandle:
            handle = start_kernel(hermes_transport, **options)
            made.append(handle)
            return handle

        yield factory
        for handle in made:
            handle.shutdown()
        for handle in made:  # nothing of the kernel may outlive the test
            wait_until(lambda h=handle: not pids_with_kernel_id(h.kernel_id), 5.0,
                       what=f"every process of kernel {handle.kernel_id} to end after shutdown")


@pytest.fixture
def kernel_factory(hermes_kernel_factory: Callable[..., KernelHandle]) -> Callable[..., KernelHandle]:
    """``kernel_factory(**options) -> KernelHandle`` on this test's transport (KernelOptions fields, tools=)."""
    return hermes_kernel_factory


@pytest.fixture
def kernel(kernel_factory: Callable[..., KernelHandle]) -> KernelHandle:
    """A kernel with default options."""
    return kernel_factory()
