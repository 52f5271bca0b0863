"""Suite time (issue #11 point 5, nineteenth session): a test whose ``hermes_kernel`` marker names
transport options (``server=False``) had a transport made for it and closed after it, so every test
of the contract suite's spawn-path leg paid an engine client or an ssh connection of its own
(0.1-0.3 s each, 312 tests). The tests of a module that name the same options now share one
transport, made by the first and closed after the module's last test; other options, another
module, or options a test's faults need still get one of their own.
"""

from __future__ import annotations

import pytest

CONFTEST = """
import functools

from pytest_hermes_kernel.transports.local import LocalTransport

EVENTS = []
_init, _close = LocalTransport.__init__, LocalTransport.close


@functools.wraps(_init)  # its signature: the options the local transport takes
def __init__(self, *args, **options):
    _init(self, *args, **options)
    EVENTS.append(("made", id(self), options.get("server")))


def close(self):
    EVENTS.append(("closed", id(self), None))
    _close(self)


LocalTransport.__init__, LocalTransport.close = __init__, close
"""

MODULE_A = """
import pytest
from conftest import EVENTS

pytestmark = pytest.mark.hermes_kernel(server=False)


def test_one(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"


def test_two(hermes_kernel):
    assert hermes_kernel.execute("2 + 2").value == "4"


def test_one_transport_for_the_module(hermes_transport):
    spawn = [e for e in EVENTS if e[0] == "made" and e[2] is False]
    assert [e[1] for e in spawn] == [id(hermes_transport)], EVENTS
    assert not [e for e in EVENTS if e[0] == "closed"], EVENTS


@pytest.mark.hermes_kernel(server=True)
def test_other_options_another_transport(hermes_transport):
    assert [e[2] for e in EVENTS if e[0] == "made"] == [False, True], EVENTS
"""

MODULE_B = """
import pytest
from conftest import EVENTS

pytestmark = pytest.mark.hermes_kernel(server=False)


def test_the_first_modules_transports_were_closed_after_it(hermes_kernel):
    made = [e[1] for e in EVENTS if e[0] == "made"]
    closed = [e[1] for e in EVENTS if e[0] == "closed"]
    assert len(made) == 3 and set(closed) == set(made[:2]), EVENTS
    assert id(hermes_kernel.transport) == made[2]
"""


def test_a_modules_tests_with_the_same_transport_options_share_one_transport(pytester: pytest.Pytester, run) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a=MODULE_A, test_b=MODULE_B)

    result = run("--hermes-transport=local", "-p", "no:randomly", "-p", "no:xdist")

    result.assert_outcomes(passed=5)
