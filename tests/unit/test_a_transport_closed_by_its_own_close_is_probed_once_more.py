"""A transport closed by its own ``close()`` is probed by the leak check once more, then no longer.

The README's backend walkthrough (``examples/backend/conftest.py``) closes each test's
transport with ``transport.close()``, as any author would. Only ``close_transport()`` took it off
``live_transports()``: every earlier test's closed transport was probed again at every later
teardown, through the backend (a fresh install measured teardowns growing from 0.10 s to 1.7 s,
the 98-case contract run taking 249 s where it took 60 s with ``close_transport``). A transport's
own ``close()`` now does what ``close_transport()`` does for the listing.
"""

from __future__ import annotations

from pytest_hermes_kernel.transports import forget_closed_transports, live_transports, make_transport, register_transport
from tests.support import FarSide


def test_a_transport_closed_by_its_own_close_leaves_the_listing_after_the_next_snapshot():
    register_transport("farside", FarSide)
    transport = make_transport("farside")
    assert transport in live_transports()

    transport.close()

    assert transport in live_transports()  # the snapshot after the test that closed it still looks
    forget_closed_transports()  # (what that snapshot does)
    assert transport not in live_transports()


class ClosingFarSide(FarSide):
    """One whose ``close()`` is its own (as every built-in transport's and ``FileCellTransport``'s)."""

    def close(self) -> None:
        self.far.clear()


def test_a_transport_whose_close_is_its_own_leaves_the_listing_too():
    register_transport("closing-farside", ClosingFarSide)
    transport = make_transport("closing-farside")

    transport.close()

    assert transport in live_transports()
    forget_closed_transports()
    assert transport not in live_transports()
