"""Twentieth session: the tests of a module whose ``hermes_kernel`` marker names the same transport
options (``server=False``) share one transport (:mod:`pytest_hermes_kernel.plugin.module_transports`).
A test that closed the transport it was handed (``hermes_transport.close()``, as a test of a
backend's close does) left it closed for the module's next tests: each errored at setup with
``KernelStartError: this docker transport was closed: it starts no container or kernel any more``
(ssh: ``this ssh transport was closed: it starts no kernel any more``). With a transport of its own,
as before the sharing, the next test got a working kernel: it does again (the module makes the
transport anew once :meth:`~pytest_hermes_kernel.kernel.contract.Transport.was_closed` says so).
"""

from __future__ import annotations

import pytest

MODULE = """
import pytest

pytestmark = pytest.mark.hermes_kernel(server=False)


def test_closes_its_transport(hermes_transport):
    hermes_transport.close()
    assert hermes_transport.was_closed()


def test_next(hermes_kernel):
    assert hermes_kernel.execute("2 + 2").value == "4"


def test_last(hermes_kernel):
    assert hermes_kernel.execute("3 + 3").value == "6"
"""


@pytest.mark.parametrize("transport", ["docker", "ssh"])
def test_the_next_test_of_a_module_gets_a_kernel_after_one_closed_its_transport(
        pytester: pytest.Pytester, run, docker_ready, transport: str) -> None:
    pytester.makepyfile(test_closing=MODULE)

    result = run(f"--hermes-transport={transport}", "-p", "no:randomly", "-p", "no:xdist")

    result.assert_outcomes(passed=3)
    assert "was closed" not in result.stdout.str()
