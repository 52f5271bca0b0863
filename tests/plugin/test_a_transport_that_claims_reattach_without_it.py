"""A transport of one's own that sets ``reattachable = True`` but keeps ``Transport.reattach``'s
default (which refuses): each re-attach case of the contract failed ``assert ('died' == 'ok')``,
its summary saying only "channel lost ... (the kernel runner ended: exit code 0)". Now each
says what the transport declares and what it lacks."""

from __future__ import annotations

CONFTEST = """
import pytest
from pytest_hermes_kernel.transports.local import LocalTransport


class Claims(LocalTransport):
    reattachable = True

    def __repr__(self):
        return "Claims()"


@pytest.fixture
def hermes_transport():
    t = Claims(server=False)
    yield t
    t.close()
"""


def test_a_reattach_case_names_the_missing_reattach(pytester, run) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", "test_drop_while_idle_reattaches_with_the_state_kept")

    assert result.parseoutcomes().get("passed", 0) == 0, result.stdout.str()[-3000:]
    text = result.stdout.str()
    assert "Claims() declares reattachable=True but keeps Transport.reattach's default" in text, text[-3000:]
