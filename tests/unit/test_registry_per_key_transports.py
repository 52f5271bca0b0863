"""A registry whose factory makes a transport per key, as a long-lived agent host's may (a
container or an ssh host per session): the registry must not hold every transport it was ever
given, and one transport's failing stale-dir sweep must not stop the others'.

The registry kept each transport the factory returned, for its stale-dir sweeps, for as long as
the registry lived: a host that served 10 000 sessions kept 10 000 transports (and whatever they
hold: clients, keys, kernel servers' handles) after every session's kernel had ended, and swept
each of them on every reap interval, closed or not. And a sweep that raised (a transport closed
under it, a host gone) ended the round before the transports after it: their stale kernel dirs
were never removed again, since the raising one came first each time.
"""

from __future__ import annotations

import gc
import sys
import threading
import weakref

import pytest

from pytest_hermes_kernel.kernel.registry import KernelKey, KernelRegistry
from tests.unit.test_registry_losses import FakeTransport


class SweptTransport(FakeTransport):
    def __init__(self, fails: bool = False) -> None:
        super().__init__()
        self.fails, self.sweeps = fails, 0

    def sweep_stale(self, max_age_s: float) -> int:
        self.sweeps += 1
        if self.fails:
            raise OSError("the host is gone")
        return 0


def test_a_transport_of_an_ended_session_is_not_kept_by_the_registry() -> None:
    made: list[weakref.ref[SweptTransport]] = []

    def per_session(_key: KernelKey) -> SweptTransport:
        transport = SweptTransport()
        made.append(weakref.ref(transport))
        return transport

    with KernelRegistry(transport_factory=per_session, background_reaper=False, idle_timeout=None) as reg:
        for n in range(5):
            assert reg.execute(KernelKey(owner=f"session-{n}"), "1").status == "ok"
            assert reg.shutdown_owner(f"session-{n}") == 1
        reg.sweep_stale()
        gc.collect()
        kept = [ref for ref in made if ref() is not None]
        assert kept == [], f"{len(kept)} of {len(made)} ended sessions' transports are still held"


def test_the_transport_of_a_live_session_is_still_swept() -> None:
    transport = SweptTransport()
    with KernelRegistry(transport_factory=lambda _key: transport,
                        background_reaper=False, idle_timeout=None) as reg:
        assert reg.execute(KernelKey(owner="live"), "1").status == "ok"
        reg.sweep_stale()
        assert transport.sweeps == 1


def test_a_failing_sweep_does_not_stop_the_other_transports_sweeps() -> None:
    broken, healthy = SweptTransport(fails=True), SweptTransport()
    transports = {"a": broken, "b": healthy}
    with KernelRegistry(transport_factory=lambda key: transports[key.owner], background_reaper=False,
                        idle_timeout=None) as reg:
        for owner in ("a", "b"):
            assert reg.execute(KernelKey(owner=owner), "1").status == "ok"
        with pytest.raises(OSError, match="the host is gone"):  # (still said: after the others' sweeps)
            reg.sweep_stale()
        assert (broken.sweeps, healthy.sweeps) == (1, 1)


def test_a_sweep_while_another_thread_starts_a_session_is_not_cut_short() -> None:
    """The weakly held transports were listed without the registry's lock: a start adding one
    meanwhile made ``sweep_stale`` raise ``RuntimeError: dictionary changed size during iteration``
    (the reaper's round then swept nothing; a caller's own call raised it), 6 starts in."""
    held: list[SweptTransport] = []

    def per_session(_key: KernelKey) -> SweptTransport:
        held.append(SweptTransport())
        return held[-1]

    errors: list[BaseException] = []
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # the threads switch as often as a loaded machine may make them
    try:
        with KernelRegistry(transport_factory=per_session, background_reaper=False, idle_timeout=None) as reg:
            stop = threading.Event()

            def sweeping() -> None:
                while not stop.is_set():
                    try:
                        reg.sweep_stale()
                    except RuntimeError as exc:
                        errors.append(exc)

            sweeper = threading.Thread(target=sweeping)
            sweeper.start()
            try:
                for n in range(60):
                    assert reg.execute(KernelKey(owner=f"session-{n}"), "1").status == "ok"
            finally:
                stop.set()
                sweeper.join(30)
    finally:
        sys.setswitchinterval(interval)
    assert errors == [], f"{len(errors)} sweeps raised: {errors[0]!r}"
