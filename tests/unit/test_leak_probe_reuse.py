"""The transport probe of the leak check reuses its last snapshot while this process did nothing
towards kernels (no transport method called, no channel frame) and no transport came or went,
for at most ``REUSE_S`` seconds; anything done, a cleanup or a re-check looks again. A test that
starts no kernel then costs no round trip to a container or an ssh host (measured: 31 -> 12 ms
per snapshot with docker, ssh and filecell transports live)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_hermes_kernel.kernel.contract import activity, note_activity
from pytest_hermes_kernel.leaks import probes
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport, register_transport
from tests.support import FakeClock, FarSide


@pytest.fixture
def farside() -> Any:
    register_transport("farside", FarSide)
    transport = make_transport("farside")
    yield transport
    close_transport(transport)
    forget_closed_transports()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def resources(clock: FakeClock) -> probes.TransportResources:
    return probes.TransportResources(clock=clock)


def test_a_transports_public_methods_count_as_activity_and_its_probes_do_not(farside):
    before = activity()
    farside.leak_snapshot(0)
    farside.describe()
    assert activity() == before
    farside.leave_behind("runner")
    assert activity() == before + 1


def test_the_snapshot_is_reused_while_nothing_is_done(farside, resources, clock):
    first = resources.snapshot()
    clock.advance(probes.REUSE_S / 2)

    assert resources.snapshot() == first and farside.visits == 1


def test_a_method_call_or_a_channel_frame_makes_it_look_again(farside, resources):
    resources.snapshot()
    farside.leave_behind("runner")

    assert "remote kernel process|farside:runner" in resources.snapshot() and farside.visits == 2
    note_activity()  # what the channel notes for every frame
    resources.snapshot()
    assert farside.visits == 3


def test_it_looks_again_after_reuse_s_a_cleanup_or_when_asked(farside, resources, clock):
    resources.snapshot()
    clock.advance(probes.REUSE_S)
    resources.snapshot()
    assert farside.visits == 2
    resources.cleanup("remote kernel process|farside:x")
    resources.snapshot()
    assert farside.visits == 3
    resources.fresh()
    resources.snapshot()
    assert farside.visits == 4


def test_a_transport_made_meanwhile_is_probed_at_once(resources):
    resources.snapshot()
    register_transport("farside", FarSide)
    late = make_transport("farside")
    try:
        late.far["farside:late"] = "late"  # no method call: only its arrival says look

        assert "remote kernel process|farside:late" in resources.snapshot() and late.visits == 1
    finally:
        close_transport(late)
        forget_closed_transports()


def test_the_leak_checks_re_check_never_reads_a_reused_snapshot(farside, resources):
    """A leak found by the first look is looked at again: the reaping may finish meanwhile (with
    no call of the transport's, so no activity to say so)."""
    looks = []

    def look():
        looks.append(1)
        if len(looks) == 3:  # before, the first look after, the re-check
            farside.far.clear()
        return resources.snapshot()

    checker = LeakChecker([probes.Probe("transport resource", look, kinds_in_identity=True, fresh=resources.fresh)],
                          grace=5.0)
    before = checker.before()
    farside.leave_behind("runner")

    assert not checker.after(before)
    assert len(looks) == 3 and farside.visits == 3
