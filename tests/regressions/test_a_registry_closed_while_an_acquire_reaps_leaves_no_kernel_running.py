"""A registry closed while a cell's acquire was under way left running the kernels that acquire had
taken out to end (idle past ``idle_timeout``, or over ``max_kernels``): their runner, worker and
kernel dir outlived ``close()``, which waited for them in vain (``3 * shutdown_grace + 10`` s).

The acquire takes those kernels out of the map under the lock and ends them once it has its
entry; when it raised instead (the registry closed meanwhile: ``KernelShutdownError``, or a
Ctrl-C) nobody ended them. Now they are ended before the error goes on (found by the random
registry driver, ``tests/registry_fuzz.py``, with a 0.3-s idle timeout and a close in flight).
"""

from __future__ import annotations

import threading

import pytest

from pytest_hermes_kernel import KernelKey
from pytest_hermes_kernel.errors import KernelShutdownError
from pytest_hermes_kernel.transports import get_transport
from tests.support import gone, wait_until

KEY = KernelKey(owner="conv-idle")


def test_a_close_during_an_acquire_ends_what_it_reaped(make_registry, fake_clock) -> None:
    local = get_transport("local")
    makings: list[str] = []
    box: list = []

    def factory(key: KernelKey):  # the acquire's second making of its key's transport: the registry closes now
        makings.append(key.owner)
        if len(makings) == 2:
            box.append(threading.Thread(target=box[0].close, daemon=True))
            box[1].start()
            wait_until(lambda: box[0]._closed, 10.0, what="close() to begin")
        return local

    reg = make_registry(idle_timeout=10.0, clock=fake_clock, transport_factory=factory)
    box.append(reg)
    first = reg.execute(KEY, "1")
    fake_clock.advance(11.0)  # its kernel is idle past the timeout: the next acquire reaps it

    with pytest.raises(KernelShutdownError):
        reg.execute(KEY, "2")
    box[1].join(60.0)

    assert not box[1].is_alive()
    wait_until(lambda: gone(first.kernel.pid), 10.0, what="the reaped kernel to end")
