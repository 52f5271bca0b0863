"""The public entry points, wired to the built-in transports.

The core (:mod:`pytest_hermes_kernel.kernel`) knows no transport by name: its registry takes a
transport factory. This module is where the defaults are chosen: :func:`start_kernel` resolves
a transport name and :class:`KernelRegistry` uses the shared transport for ``key.transport``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Mapping
from typing import Any

from .errors import ConfigError
from .kernel.contract import Transport
from .kernel.handle import KernelHandle
from .kernel.options import KernelOptions, built
from .kernel.registry import KernelKey
from .kernel.registry import KernelRegistry as CoreRegistry
from .kernel.registry import TransportFactory
from .kernel.rpc import ToolTable
from .transports import get_transport, transport_factory

__all__ = ["KernelRegistry", "shared_transport", "start_kernel"]


def shared_transport(key: KernelKey) -> Transport:
    """The default transport factory: the process-wide shared transport for ``key.transport``.

    :raises TypeError: if ``key`` is no :class:`KernelKey` (a transport's name: ``get_transport(name)``).
    :raises ConfigError: if the name is unknown.
    :raises TransportUnavailableError: if that transport cannot run here.
    """
    if not isinstance(key, KernelKey):
        raise TypeError(f"shared_transport() takes a KernelKey, not {type(key).__name__} {key!r}: "
                        "get_transport(name) gives the shared transport of a name")
    return get_transport(key.transport)


class KernelRegistry(CoreRegistry):
    """:class:`pytest_hermes_kernel.kernel.registry.KernelRegistry` with the default factory.

    Takes every keyword of the core registry; ``transport_factory`` defaults to
    :func:`shared_transport`, and with it a ``transport=`` name that no transport has is refused.

    :raises ConfigError: for an unknown ``transport`` name (with the closest known one), or a bad setting.
    """

    def __init__(self, *, transport_factory: TransportFactory | None = None, **options: Any) -> None:
        if transport_factory is None and isinstance(options.get("transport"), str):
            _check_name(options["transport"])  # a misspelt default is refused now, not at the first cell
        super().__init__(transport_factory=transport_factory or shared_transport, **options)


def start_kernel(transport: str | Transport = "local", *, tools: ToolTable | Mapping[str, Any] | None = None,
                 **options: Any) -> KernelHandle:
    """Start a kernel and return its handle (use it as a context manager to shut it down).

    :param transport: a transport name (``local``, ``docker``, ``ssh``, ``filecell``) or a
        :class:`~pytest_hermes_kernel.kernel.contract.Transport` instance.
    :param tools: ``{name: callable}`` offered to cells as ``hermes_tools.<name>``.
    :param options: fields of :class:`KernelOptions` (``timeout=``, ``max_output_bytes=``, ...).
    :raises ConfigError: for an unknown transport or option.
    :raises TypeError: if ``tools`` is no dict (or :class:`ToolTable`).
    :raises KernelStartError: if the kernel does not start.
    """
    try:
        opts = built(KernelOptions, options)
    except ConfigError as exc:
        raise ConfigError(f"bad kernel option: {exc}{_transport_option_hint(transport, options)}") from None
    if isinstance(transport, type) and issubclass(transport, Transport):  # it said only "a name is a str, not ABCMeta"
        raise ConfigError(f"start_kernel takes a transport's name or a Transport instance, not the class "
                          f"{transport.__name__}: pass an instance, {transport.__name__}(...)")
    t = transport if isinstance(transport, Transport) else get_transport(transport)  # a bad name: ConfigError
    return KernelHandle(t, opts, tools=tools).start()


def _transport_option_hint(transport: str | Transport, options: Mapping[str, Any]) -> str:
    """Where an option of the transport (``server=``, ``container=``, ...) given as a kernel option
    goes, or ``""``: a transport takes its options when it is made, not per kernel."""
    if not isinstance(transport, str):
        return ""
    try:
        takes = inspect.signature(transport_factory(transport)).parameters
    except (ConfigError, ImportError, TypeError, ValueError):
        return ""
    fields = {f.name for f in dataclasses.fields(KernelOptions)}
    theirs = [key for key in options if key in takes and key not in fields]
    if not theirs:
        return ""
    made = ", ".join(f"{key}={options[key]!r}" for key in theirs)
    return (f". Hint: {'=, '.join(theirs)}= {'is an option' if len(theirs) == 1 else 'are options'} of the "
            f"{transport} transport, not of the kernel: start_kernel(make_transport({transport!r}, {made}), ...) "
            "(make_transport from pytest_hermes_kernel.transports; you close that transport)")


def _check_name(name: str) -> None:
    """:raises ConfigError: if no transport has ``name`` (the registry's parameter shadows :func:`transport_factory`)."""
    transport_factory(name)
