"""A closed transport is probed again only while it shows what no open transport shows.

A closed ssh transport's last leak look connects anew (see
``tests/plugin/test_a_daemon_left_through_a_closed_transport_is_the_leak_of_the_test_that_left_it.py``)
and lists every kernel process of this test process on its host, the open transports' kernels
too. Probed again while it showed anything, it lingered for as long as those kernels ran, a new
ssh connection at every later check; what only it shows (a daemon its test left) keeps it probed,
so the check's re-checks still see that leak.
"""

from __future__ import annotations

from pytest_hermes_kernel.leaks.transport_probe import TransportResources
from pytest_hermes_kernel.transports import make_transport, register_transport
from tests.support import FakeClock, FarSide


def _two_on_one_host() -> tuple[FarSide, FarSide]:
    register_transport("farside", FarSide)
    opened, closed = make_transport("farside"), make_transport("farside")
    closed.far = opened.far  # one host, seen through both
    return opened, closed


def test_a_closed_transport_that_shows_only_an_open_ones_kernel_is_probed_no_more():
    opened, closed = _two_on_one_host()
    opened.leave_behind("a-kernel-of-the-open-transport")
    probe = TransportResources(clock=FakeClock())
    try:
        closed.close()
        probe.snapshot()  # its last look
        visits = closed.visits
        probe.fresh()

        probe.snapshot()

        assert (visits, closed.visits) == (1, 1)
    finally:
        opened.far.clear()
        closed.far = {}
        opened.close()


def test_a_closed_transport_that_shows_a_leak_of_its_own_is_probed_again():
    opened, closed = _two_on_one_host()
    opened.leave_behind("a-kernel-of-the-open-transport")
    probe = TransportResources(clock=FakeClock())
    try:
        closed.close()
        closed.far = dict(opened.far, **{"farside:daemon": "a daemon only it shows"})
        probe.snapshot()
        probe.fresh()

        again = probe.snapshot()

        assert closed.visits == 2 and "remote kernel process|farside:daemon" in again
    finally:
        opened.far.clear()
        closed.far = {}
        opened.close()
