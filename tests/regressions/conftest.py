"""Fixtures for the regression scenarios: registries and kernels that cannot outlive their test."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_hermes_kernel import KernelHandle, KernelRegistry, start_kernel
from tests.helpers import kernel_ids_below, wait_until


class FakeClock:
    """A monotonic clock the test moves by hand (the registry's clock seam)."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def no_kernel_left_behind() -> Iterator[None]:
    """Fail the test if a kernel process started during it is still running afterwards."""
    before = kernel_ids_below()
    yield
    wait_until(lambda: not (kernel_ids_below() - before), 5.0,
               what="every kernel process started by this test to end")


@pytest.fixture
def make_registry(no_kernel_left_behind: None) -> Iterator[Callable[..., KernelRegistry]]:
    """``make_registry(**kwargs)``: a :class:`KernelRegistry` closed after the test."""
    made: list[KernelRegistry] = []

    def make(**kwargs: Any) -> KernelRegistry:
        kwargs.setdefault("background_reaper", False)
        registry = KernelRegistry(**kwargs)
        made.append(registry)
        return registry

    yield make
    for registry in made:
        registry.close()


@pytest.fixture
def make_kernel(no_kernel_left_behind: None) -> Iterator[Callable[..., KernelHandle]]:
    """``make_kernel(**options)``: a started local kernel, shut down after the test."""
    made: list[KernelHandle] = []

    def make(**options: Any) -> KernelHandle:
        handle = start_kernel("local", **options)
        made.append(handle)
        return handle

    yield make
    for handle in made:
        handle.shutdown()
