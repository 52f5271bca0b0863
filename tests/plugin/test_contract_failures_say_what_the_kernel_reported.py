"""A contract case that fails on a broken backend shows what the kernel reported about the cell.

Its result's ``summary()`` says why the ladder went the way it did ("the interrupt was
ineffective", "the runner was not seen gone"); the cases' bare asserts showed only the two
statuses (``'reset' == 'interrupted'``, ``'abandoned' == 'reset'``), so the backend's author
saw which outcome differed but not the cause the kit had already found.
"""

from __future__ import annotations

import pytest

CONFTEST = """
import pytest
from pytest_hermes_kernel.transports.local import LocalTransport


class DropsInterrupts:
    def __init__(self, inner):
        self.inner = inner

    def send(self, data):
        if b'"interrupt"' not in data:  # a relay that loses the control message
            self.inner.send(data)

    def recv(self, timeout):
        return self.inner.recv(timeout)

    def close(self):
        self.inner.close()


class Broken(LocalTransport):
    def launch(self, spec):
        launched = super().launch(spec)
        if "{broken}" == "interrupt":
            launched.stream = DropsInterrupts(launched.stream)
        return launched

    def alive(self, launched):
        return True if "{broken}" == "alive" else super().alive(launched)


@pytest.fixture
def hermes_transport():
    t = Broken(server=False)
    yield t
    t.close()
"""


@pytest.mark.parametrize("broken, case, says", [
    ("interrupt", "test_timeout_interrupt_keeps_state", "the interrupt was ineffective"),
    ("alive", "test_unreachable_runner_is_killed_from_outside_and_replaced", "the runner was not seen gone"),
], ids=["interrupt-dropped", "alive-always"])
def test_a_failing_contract_case_shows_the_cells_summary(pytester, run, broken, case, says) -> None:
    pytester.makeconftest(CONFTEST.replace("{broken}", broken))
    pytester.makepyfile(test_contract="from pytest_hermes_kernel.contract import *  # noqa: F401,F403\n")

    result = run("-q", "-k", case, "--hermes-leak-check=off")

    result.assert_outcomes(failed=1)
    failure = result.stdout.str().split("hermes-kernel: kernel")[0]  # the assertion, not the kernel's story after it
    assert "AssertionError: status=timeout; " in failure and says in failure, failure[-3000:]
