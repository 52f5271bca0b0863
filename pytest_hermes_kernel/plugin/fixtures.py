"""Fixtures that hand a test real kernels: ``hermes_transport``, ``hermes_kernel_factory``,
``hermes_kernel`` and ``hermes_registry``, configured by the ``hermes_kernel(...)`` marker.

``hermes_transport`` is parametrized over ``--hermes-transport`` (the matrix). A backend
author overrides it in a conftest to return their own :class:`Transport` and gets every test
that uses these fixtures, the contract suite included, against their backend.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ..errors import ConfigError, HermesKernelError, TransportUnavailableError
from ..kernel.handle import KernelHandle, KernelOptions
from ..kernel.registry import KernelRegistry
from ..transports import get_transport, make_transport
from ..transports.base import Transport
from .report import phase_report_key, stats_key
from .settings import settings_key

_KERNEL_FIELDS = {f.name for f in dataclasses.fields(KernelOptions)}
_MARKER_ONLY = {"transport", "tools"}


@dataclasses.dataclass(frozen=True)
class KernelMarker:
    """The parsed ``hermes_kernel(...)`` marker: kernel options, tools, transport pin and options."""

    kernel: dict[str, Any]
    tools: dict[str, Callable[..., Any]]
    transport: str | None
    transport_options: dict[str, Any]


def _parse_marker(**kwargs: Any) -> KernelMarker:
    kernel = {k: v for k, v in kwargs.items() if k in _KERNEL_FIELDS}
    rest = {k: v for k, v in kwargs.items() if k not in _KERNEL_FIELDS and k not in _MARKER_ONLY}
    return KernelMarker(kernel=kernel, tools=dict(kwargs.get("tools") or {}), transport=kwargs.get("transport"),
                        transport_options=rest)


def kernel_marker(node: pytest.Item) -> KernelMarker:
    """Merge every ``hermes_kernel`` marker on ``node`` (closest wins).

    :raises pytest.UsageError: naming the test when an argument is bad.
    """
    merged: dict[str, Any] = {}
    for mark in reversed(list(node.iter_markers("hermes_kernel"))):
        if mark.args:
            raise pytest.UsageError(f"{node.nodeid}: hermes_kernel(...) takes keyword arguments only, "
                                    f"got positional {mark.args!r}")
        merged.update(mark.kwargs)
    try:
        return _parse_marker(**merged)
    except TypeError as exc:
        raise pytest.UsageError(f"{node.nodeid}: bad hermes_kernel marker: {exc}") from None


def _our_transport_fixture_used(metafunc: pytest.Metafunc) -> bool:
    defs = getattr(metafunc, "_arg2fixturedefs", {}).get("hermes_transport")
    return bool(defs) and getattr(defs[-1], "func", None) is hermes_transport.__wrapped__  # type: ignore[attr-defined]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "hermes_transport" not in metafunc.fixturenames or not _our_transport_fixture_used(metafunc):
        return
    names = list(metafunc.config.stash[settings_key].transport)
    only = [n for m in metafunc.definition.iter_markers("hermes_transports") for n in m.args]
    pinned = kernel_marker(metafunc.definition).transport
    if pinned:
        names = [pinned]
    elif only:
        names = [n for n in names if n in only]
    if not names:
        names = ["<none>"]
    metafunc.parametrize("hermes_transport", names, indirect=True, ids=names)


def _unavailable(request: pytest.FixtureRequest, why: str) -> None:
    if request.config.stash[settings_key].require_transports:
        pytest.fail(f"required transport unavailable: {why}", pytrace=False)
    pytest.skip(why)


@pytest.fixture
def hermes_transport(request: pytest.FixtureRequest) -> Iterator[Transport]:
    """The :class:`Transport` this test's kernels run on (one per ``--hermes-transport`` entry).

    Skips with the reason (``hermes-kernel doctor`` says the same) when the transport cannot run
    here, or fails under ``--hermes-require-transports``. Marker transport options (e.g.
    ``container="fresh"``) give the test its own transport instance, closed after it.
    """
    name = getattr(request, "param", None) or request.config.stash[settings_key].transport[0]
    if name == "<none>":
        pytest.skip("no transport of --hermes-transport is selected for this test (hermes_transports marker)")
    marker = kernel_marker(request.node)
    try:
        if marker.transport_options:
            transport = make_transport(name, **marker.transport_options)
        else:
            transport = get_transport(name)
    except TransportUnavailableError as exc:
        _unavailable(request, str(exc))
        raise
    except ConfigError as exc:
        raise pytest.UsageError(f"{request.node.nodeid}: {exc}") from None
    yield transport
    if marker.transport_options:
        transport.close()


@pytest.fixture
def hermes_kernel_factory(request: pytest.FixtureRequest, hermes_transport: Transport) -> Iterator[Callable[..., KernelHandle]]:
    """``factory(**options) -> KernelHandle``: start kernels on this test's transport.

    Options are :class:`KernelOptions` fields plus ``tools={name: callable}``; they override the
    marker's. Every kernel is shut down after the test (kept until the session ends instead
    when the test failed and ``--hermes-keep-failed`` is on).
    """
    settings = request.config.stash[settings_key]
    marker = kernel_marker(request.node)
    stats = request.config.stash[stats_key]
    made: list[KernelHandle] = []

    def factory(**options: Any) -> KernelHandle:
        tools = {**marker.tools, **(options.pop("tools", None) or {})}
        merged = {"timeout": settings.timeout, **marker.kernel, **options}
        try:
            opts = KernelOptions(**merged)
        except TypeError as exc:
            raise pytest.UsageError(f"{request.node.nodeid}: bad kernel option: {exc}") from None
        handle = KernelHandle(hermes_transport, opts, tools=tools, owner=request.node.nodeid)
        handle.add_listener(stats.on_event)
        made.append(handle)
        return handle.start()

    yield factory
    _finish_kernels(request, made)


def _finish_kernels(request: pytest.FixtureRequest, handles: list[KernelHandle]) -> None:
    reports = request.node.stash.get(phase_report_key, {})
    failed = any(r.failed for r in reports.values())
    stats = request.config.stash[stats_key]
    if failed and request.config.stash[settings_key].keep_failed:
        for handle in handles:
            if handle.alive:
                stats.keep(request.node.nodeid, handle)
        return
    errors = []
    for handle in handles:
        try:
            handle.shutdown()
        except HermesKernelError as exc:
            errors.append(f"{handle!r}: {exc}")
    if errors:
        raise HermesKernelError("kernel shutdown failed after the test: " + "; ".join(errors))


@pytest.fixture
def hermes_kernel(hermes_kernel_factory: Callable[..., KernelHandle]) -> KernelHandle:
    """One started kernel on this test's transport, configured by the ``hermes_kernel`` marker."""
    return hermes_kernel_factory()


@pytest.fixture
def hermes_registry(request: pytest.FixtureRequest, hermes_transport: Transport) -> Iterator[KernelRegistry]:
    """A :class:`KernelRegistry` whose kernels run on this test's transport; closed after the test.

    ``KernelKey(transport=...)`` names other than this test's transport use the shared
    transport of that name.
    """
    settings = request.config.stash[settings_key]
    marker = kernel_marker(request.node)
    opts = KernelOptions(**{"timeout": settings.timeout, **marker.kernel})
    stats = request.config.stash[stats_key]
    own = hermes_transport.name

    def factory(key: Any) -> Transport:
        return hermes_transport if key.transport == own else get_transport(key.transport)

    registry = KernelRegistry(max_kernels=settings.max_kernels, idle_timeout=settings.idle_timeout,
                              options=opts, tools=marker.tools, transport_factory=factory)
    registry.listener = stats.on_event
    yield registry
    registry.close()
