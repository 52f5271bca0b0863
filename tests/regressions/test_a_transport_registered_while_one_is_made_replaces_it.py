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


def test_a_transport_a_signal_handler_made_during_the_making_is_not_lost() -> None:
    """A signal's handler that lands in the making thread and asks for the same name makes its own
    (the making is its thread's, which waits for nothing): it was stored as the shared one, then the
    interrupted making overwrote it, and it was in neither the shared nor the retired transports:
    never closed (a docker transport's container outlived the run)."""
    import signal

    from pytest_hermes_kernel import transports

    local, made = transport_factory("local"), []

    def make(**options):
        mine = local(**options)
        made.append(mine)
        if len(made) == 1:
            signal.raise_signal(signal.SIGUSR1)  # its handler runs here, in the making
        return mine

    name = f"inhandler-{uuid.uuid4().hex[:8]}"
    register_transport(name, make)
    previous = signal.signal(signal.SIGUSR1, lambda *_: get_transport(name))
    try:
        get_transport(name)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    assert len(made) == 2, made
    closed_later = [shared.transport for shared in transports.shared_transports().values()] + transports._retired
    assert [any(t is c for c in closed_later) for t in made] == [True, True], "a transport made is closed by no one"
