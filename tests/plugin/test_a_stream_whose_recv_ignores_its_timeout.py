"""A transport of one's own whose ``ByteStream`` was written from its docstring but set the socket
blocking in ``recv`` (``settimeout(None)``, or a pipe read without ``select``): the channel's
reader waits in ``recv`` for a cell's result, so no budget or watchdog ever fired, and the
contract suite hung at its first cell with a budget (a run killed after 400 s, 34 cases done, no
word of why). Now every case errors at setup naming the stream and the rule it broke."""

from __future__ import annotations

CONFTEST = """
import pytest
from pytest_hermes_kernel.transports.local import LocalTransport


class Blocking:
    def __init__(self, inner):
        self.inner = inner

    def send(self, data):
        self.inner.send(data)

    def recv(self, timeout):
        return self.inner.recv(None{honours})

    def close(self):
        self.inner.close()


class Mine(LocalTransport):
    def launch(self, spec):
        launched = super().launch(spec)
        launched.stream = Blocking(launched.stream)
        return launched

    def __repr__(self):
        return "Mine()"


@pytest.fixture
def hermes_transport():
    t = Mine(server=False)
    yield t
    t.close()
"""

CASES = "test_namespace_persists_across_cells or test_timeout_interrupt_keeps_state"


def test_a_recv_that_blocks_past_its_timeout_errors_every_case_naming_it(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.format(honours=""))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", CASES)

    result.assert_outcomes(errors=2)
    text = result.stdout.str().split("short test summary info")[0]
    assert text.count("Mine(): Blocking.recv(0.2) on an idle kernel's stream had not returned after 10.0 s: a "
                      "ByteStream's recv(timeout) raises TimeoutError once nothing came within timeout seconds") == 2, \
        result.stdout.str()[-3000:]


def test_a_stream_that_keeps_its_timeout_passes(pytester, run) -> None:
    pytester.makeconftest(CONFTEST.replace("self.inner.recv(None{honours})", "self.inner.recv(timeout)"))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    run("-q", "-k", CASES).assert_outcomes(passed=2)
