"""The transport of a test whose ``hermes_kernel`` marker names transport options: one per module.

A test whose marker names transport options (``server=False``, ``container="fresh"``) runs on
a transport made with them, not on the run's shared one. The tests of one module that name the
same options (and the same transport) share one such transport, made by the first of them and
closed when the module's last test has run (but for ``container="fresh"``: see
:func:`transport_for`). A transport made and closed for each test cost every test of such a
module an engine client or an ssh connection of its own (0.1-0.3 s each: the contract suite's
spawn-path leg, 312 tests, summed 191 s against 179 s for the 416 tests of the suite on the
shared transports; measured 2026-12-07). A test whose faults need options of their transport (a
proxy route, a memory limit) still gets a transport of its own, closed after it: a fault changes
what it runs on. ``-p no:pytest_hermes_kernel.plugin.module_transports`` turns the sharing off:
each such test gets a transport of its own again.

May import: pytest and the transports registry (inside the functions: a run that starts no
kernel imports none of it).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..kernel.contract import Transport

__all__ = ["transport_for"]


@pytest.fixture(scope="module")
def _hermes_module_transports() -> Iterator[dict[str, Transport]]:
    """The transports made for this module's tests' marker options, by name and options; each is
    closed after the module's last test (:func:`transport_for` makes them)."""
    made: dict[str, Transport] = {}
    yield made
    from ..transports import close_transport

    for transport in made.values():
        close_transport(transport)


def transport_for(request: pytest.FixtureRequest, name: str, defaults: dict[str, Any], marker_options: dict[str, Any],
                  fault_options: dict[str, Any]) -> tuple[Transport, bool]:
    """The transport of ``request``'s test, and whether it is the test's own (closed after it).

    The run's shared transport when neither the marker nor the faults name options; the module's
    one for the marker's options (:func:`_hermes_module_transports`; made again when an earlier test
    closed it, as :meth:`~Transport.was_closed` tells: the next test's start said "this docker
    transport was closed"); a new one when faults name
    some, or the marker asks for a container per kernel (``container="fresh"``: a failed test's
    kernel kept by ``--hermes-keep-failed`` keeps its container only from a close right after its
    test, before its TTL can run out: a close at the module's end removed it), or this plugin is
    turned off (``-p no:pytest_hermes_kernel.plugin.module_transports``: each such test errored at
    setup, ``fixture '_hermes_module_transports' not found``).

    :param name: the transport's name.
    :param defaults: the run's options of that transport (CLI, ini).
    :param marker_options: the test's ``hermes_kernel`` marker's transport options.
    :param fault_options: the options the test's faults need of their transport.
    :raises ConfigError: if an option is not accepted.
    :raises TransportUnavailableError: if the transport cannot run here.
    """
    from ..transports import get_transport, make_transport

    if not marker_options and not fault_options:
        return get_transport(name, **defaults), False
    if fault_options or marker_options.get("container") == "fresh" or not request.config.pluginmanager.has_plugin(__name__):
        return make_transport(name, **{**defaults, **fault_options, **marker_options}), True
    made: dict[str, Transport] = request.getfixturevalue("_hermes_module_transports")
    key = repr((name, sorted(defaults.items()), sorted(marker_options.items())))
    if key not in made or made[key].was_closed():  # an earlier test closed it: this one gets a new one, as its own
        made[key] = make_transport(name, **{**defaults, **marker_options})
    return made[key], False
