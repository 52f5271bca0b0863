"""``register_transport(name, factory)`` while another thread's ``get_transport(name)`` makes that
name's shared transport with the old factory.

``register_transport`` says a shared instance made before is no longer handed out. It waited for the
making when the making held the lock of every name; once the making ran outside it (c82c0ff), the
instance the old factory made was stored as the shared one after the new factory was registered,
and every later ``get_transport(name)`` handed out the old factory's instance. Now it is retired
(closed with the shared transports, as one replaced is) and a later call gets the new factory's.
"""

from __future__ import annotations

import threading
import uuid

from pytest_hermes_kernel.transports import get_transport, register_transport, transport_factory

HELD_S = 20.0  # how long the old factory holds at most (it is let go as soon as the test has re-registered)


def test_a_transport_registered_while_the_old_one_is_made_is_the_one_handed_out() -> None:
    local, entered, release = transport_factory("local"), threading.Event(), threading.Event()
    made: dict[str, list] = {"old": [], "new": []}

    def factory(which: str, wait: bool):
        def make(**options):
            if wait:
                entered.set()
                release.wait(HELD_S)
            made[which].append(local(**options))
            return made[which][-1]
        return make

    name = f"rereg-{uuid.uuid4().hex[:8]}"
    register_transport(name, factory("old", wait=True))
    first: list = []
    maker = threading.Thread(target=lambda: first.append(get_transport(name)))
    maker.start()
    try:
        assert entered.wait(30), "the old factory was never called"
        register_transport(name, factory("new", wait=False))
    finally:
        release.set()
    maker.join(60)
    assert first == made["old"], first  # (asked before the re-registration: the old factory's)
    later = get_transport(name)
    assert made["new"] and later is made["new"][0], f"handed out {later!r}, made: {made}"
