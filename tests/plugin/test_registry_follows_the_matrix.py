"""``hermes_registry`` follows the matrix (issue #9 point 1): on each leg of
``--hermes-transport=local,mirror``, ``KernelKey(owner=...)`` runs on that leg's transport, and a
key that names a transport explicitly still gets it. Before, keys defaulted to ``local``, so every
other leg tested nothing it claimed to."""

from __future__ import annotations

import pytest

CONFTEST = """
from pytest_hermes_kernel.transports import register_transport
from pytest_hermes_kernel.transports.local import LocalTransport


class MirrorTransport(LocalTransport):
    name = "mirror"  # a second transport, as a backend would add one


register_transport("mirror", MirrorTransport)
"""

TESTS = """
from pytest_hermes_kernel import KernelKey

def test_key_without_transport(hermes_registry, hermes_transport):
    r = hermes_registry.execute(KernelKey(owner="a"), "1 + 1")
    assert r.value == "2"
    assert r.kernel.transport == hermes_transport.name
    [snap] = hermes_registry.snapshot()
    assert snap.key.transport == hermes_transport.name
    print(f"\\nLEG {hermes_transport.name} RAN {r.kernel.transport}")

def test_explicit_transport_is_kept(hermes_registry):
    r = hermes_registry.execute(KernelKey(owner="b", transport="local"), "1")
    assert r.kernel.transport == "local"
"""


def test_keys_without_a_transport_follow_the_leg(pytester: pytest.Pytester, run) -> None:  # type: ignore[no-untyped-def]
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_matrix=TESTS)
    result = run("-s", "--hermes-transport=local,mirror")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines_random(["*LEG local RAN local*", "*LEG mirror RAN mirror*"])
