"""Twentieth session: every feature of the kit is a plugin module that ``-p no:NAME`` turns off
(README, "Every feature is its own plugin module"), the transport a module's tests share for their
marker's options too (``pytest_hermes_kernel.plugin.module_transports``). Turned off, every test
whose ``hermes_kernel`` marker names transport options errored at setup: ``fixture
'_hermes_module_transports' not found``. Each such test gets a transport of its own again, made for
it and closed after it, as before the sharing.
"""

from __future__ import annotations

import pytest

from tests.plugin.test_a_modules_tests_with_the_same_transport_options_share_one_transport import CONFTEST

MODULE = """
import pytest
from conftest import EVENTS

pytestmark = pytest.mark.hermes_kernel(server=False)


def test_one(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"


def test_two(hermes_transport):
    made = [e[1] for e in EVENTS if e[0] == "made"]
    closed = [e[1] for e in EVENTS if e[0] == "closed"]
    assert len(made) == 2 and closed == made[:1] and made[1] == id(hermes_transport), EVENTS
"""


def test_a_run_with_module_transports_turned_off_gives_each_test_its_own(pytester: pytest.Pytester, run) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_own=MODULE)

    result = run("--hermes-transport=local", "-p", "no:randomly", "-p", "no:xdist",
                 "-p", "no:pytest_hermes_kernel.plugin.module_transports")

    result.assert_outcomes(passed=2)
