"""Seen by a user-journey helper (2026-12-07): a ``hermes_host_sigkill`` test on a filecell transport
registered with short timers (``register_transport("filecell-short", partial(FileCellTransport,
orphan_timeout=3, poll_window_s=1, hold_s=1))``) failed at teardown with ``kernel ... outlived its
SIGKILLed host by more than 8 s; still alive: ... (its runner) ... (its worker)``, while the same
settings without the harness ended in 4.6 s. The plugin handed the host harness the transport's
own ``name`` (its class's: ``filecell``), not the leg's (``filecell-short``): the harness host made
the built-in filecell transport, with its 1800-s idle timer and a 20-s poll and 600-s holder,
while the bound counted the registered 3 + 1 + 1 s. The harness now gets the leg's name.
"""

from __future__ import annotations

import pytest

CONFTEST = """
import functools
from pytest_hermes_kernel.transports import register_transport
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport

register_transport("filecell-short", functools.partial(FileCellTransport, orphan_timeout=3, poll_window_s=1, hold_s=1))
"""

TEST = """
import pytest
from pytest_hermes_kernel import HostGoneError


@pytest.mark.hermes_host_sigkill(during_cell=2, delay=0.3)
def test_host_killed(hermes_kernel):
    hermes_kernel.execute("x = 1")
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("import time; time.sleep(30)")
"""


def test_the_harness_runs_the_registered_transport_and_its_kernel_ends_in_the_bound(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_it=TEST)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-q", "--hermes-transport=filecell-short",
                                           "--hermes-leak-check=error", timeout=120)

    text = result.stdout.str()
    assert "outlived its SIGKILLed host" not in text, text[-3000:]
    result.assert_outcomes(passed=1)
