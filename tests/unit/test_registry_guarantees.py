"""What the registry promises a user, over the in-process fake runner (no processes, no sleeps).

Which kernel the cap evicts (the least recently used, unleased, unpinned one, and no other),
who is disposed when a delegated child finishes (that child's kernels, no one else's), the
remove-only-if-same rule of ``discard``, what ``get_or_start``, ``shutdown_all``, ``close`` and
the idle expiry report, and the counts in ``stats``. Written against the survivors of the
mutation run (``benchmarks/mutation.py``, issue #13): each test fails on a mutant that passed
every test before it.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_hermes_kernel.errors import KernelShutdownError
from pytest_hermes_kernel.kernel import registry as registry_module
from pytest_hermes_kernel.kernel.lifecycle import KernelState
from pytest_hermes_kernel.kernel.options import KernelOptions, WatchdogPolicy
from pytest_hermes_kernel.kernel.registry import KernelKey, KernelRegistry, live_registries
from tests.support import REPO_ROOT, stays_true
from tests.unit.test_registry_losses import Clock, FakeTransport, clock, transport  # noqa: F401  (fixtures)

A, B, C = KernelKey(owner="conv-a"), KernelKey(owner="conv-b"), KernelKey(owner="conv-c")


@pytest.fixture
def registry(transport: FakeTransport, clock: Clock):
    made: list[KernelRegistry] = []

    def make(**kwargs: Any) -> KernelRegistry:
        kwargs.setdefault("idle_timeout", None)
        reg = KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False, clock=clock,
                             **kwargs)
        made.append(reg)
        return reg

    yield make
    for reg in made:
        reg.close()


def owners(reg: KernelRegistry) -> list[str]:
    """The owners the registry holds, least recently used first."""
    return [s.key.owner for s in reg.snapshot()]


def kernel_of(reg: KernelRegistry, key: KernelKey) -> str:
    return reg.execute(key, "1").kernel.kernel_id


# ------------------------------------------------------------------------------ the LRU cap
def test_the_cap_evicts_the_least_recently_used_kernel_and_only_it(registry, clock):
    reg = registry(max_kernels=2)
    a, b = kernel_of(reg, A), kernel_of(reg, B)
    clock.now += 1
    assert kernel_of(reg, A) == a  # A is now the most recently used

    c = kernel_of(reg, C)  # over the cap: B, the least recently used, goes

    assert owners(reg) == ["conv-a", "conv-c"]
    assert reg.stats["evicted"] == 1
    ra = reg.execute(A, "2")
    assert ra.kernel.kernel_id == a and not ra.kernel.state_lost, "the recently used kernel was kept"
    rb = reg.execute(B, "3")  # B comes back fresh and says so; C, now least recent, makes room
    assert rb.kernel.kernel_id != b and rb.kernel.state_lost and rb.kernel.reason == "evicted"
    assert owners(reg) == ["conv-a", "conv-b"]
    rc = reg.execute(C, "4")
    assert rc.kernel.kernel_id != c and rc.kernel.reason == "evicted"


def test_a_registry_at_its_cap_evicts_nothing(registry, transport):
    reg = registry(max_kernels=2)
    a, b = kernel_of(reg, A), kernel_of(reg, B)

    assert kernel_of(reg, A) == a and kernel_of(reg, B) == b
    assert reg.stats["evicted"] == 0 and transport.launches == 2 and len(reg) == 2


def test_an_evicted_kernel_is_shut_down(registry):
    reg = registry(max_kernels=1)
    with reg.lease(A) as handle_a:
        pass
    kernel_of(reg, B)

    assert handle_a.stopping and handle_a.state is KernelState.CLOSED
    assert owners(reg) == ["conv-b"]


def test_a_kernel_leased_over_the_cap_is_evicted_once_its_lease_ends(registry):
    reg = registry(max_kernels=1)
    with reg.lease(A) as handle_a:
        handle_b = reg.get_or_start(B)  # A is leased: spared; B is the newest: kept
        assert owners(reg) == ["conv-a", "conv-b"] and not handle_a.stopping
    # the cap holds again when the lease ends; the kernel whose cell just settled stays
    assert owners(reg) == ["conv-a"] and handle_b.stopping and not handle_a.stopping


def test_pinned_kernels_do_not_count_against_the_cap(registry):
    reg = registry(max_kernels=1)
    child = KernelKey.child("conv-a", "c1")
    kernel_of(reg, child)
    with reg.lease(B, pinned=True):
        pass
    kernel_of(reg, A)

    assert reg.stats["evicted"] == 0 and len(reg) == 3
    assert {s.key.owner: s.pinned for s in reg.snapshot()} == {child.owner: True, "conv-b": True, "conv-a": False}


# ------------------------------------------------------------------------------ delegated children
def test_a_finished_child_disposes_its_kernels_and_no_one_elses(registry):
    reg = registry(max_kernels=4)
    mine = [KernelKey.child("conv-a", "c1"), KernelKey.child("conv-a", "c1", tools=("t",))]
    others = [KernelKey(owner="conv-a"), KernelKey.child("conv-a", "c2"), KernelKey.child("conv-b", "c10")]
    handles = {}
    for key in mine + others:
        with reg.lease(key) as handle:
            handles[key] = handle

    assert reg.shutdown_child("c1") == 2

    assert all(handles[k].stopping for k in mine)
    assert not any(handles[k].stopping for k in others)
    assert {s.key for s in reg.snapshot()} == {reg.resolve(k) for k in others}
    assert reg.shutdown_child("c1") == 0, "nothing left to dispose"


# ------------------------------------------------------------------------------ discard
def test_discard_removes_the_entry_only_if_it_still_holds_that_handle(registry):
    reg = registry()
    old = reg.get_or_start(A)

    assert reg.discard(A, old) is True
    assert old.stopping and len(reg) == 0
    new = reg.get_or_start(A)
    assert new is not old

    assert reg.discard(A, old) is False, "a stale handle does not remove the key's current kernel"
    assert not new.stopping and reg.get_or_start(A) is new
    r = reg.execute(A, "1")
    assert r.kernel.kernel_id == new.kernel_id and not r.kernel.state_lost


def test_discard_of_a_handle_the_registry_never_held_shuts_that_handle_down(registry, transport):
    from pytest_hermes_kernel.kernel.handle import KernelHandle

    reg = registry()
    current = reg.get_or_start(A)
    stranger = KernelHandle(transport).start()

    assert reg.discard(A, stranger) is False
    assert stranger.stopping and not current.stopping and reg.get_or_start(A) is current


# ------------------------------------------------------------------------------ get_or_start, execute
def test_get_or_start_gives_the_keys_kernel_without_holding_a_lease(registry):
    reg = registry()
    first = reg.get_or_start(A)

    assert reg.get_or_start(A) is first and first.state is KernelState.IDLE
    assert [(s.leases, s.state, s.pinned) for s in reg.snapshot()] == [(0, "ready", False)]
    assert reg.get_or_start(KernelKey.child("conv-a", "c1")) is not first
    assert reg.snapshot()[-1].pinned, "a delegated child's kernel is pinned by default"


def test_a_lease_is_counted_while_held(registry):
    reg = registry()
    with reg.lease(A) as handle, reg.lease(A) as again:
        assert again is handle and [s.leases for s in reg.snapshot()] == [2]
    assert [s.leases for s in reg.snapshot()] == [0]


def test_execute_with_reset_restarts_a_used_kernel_only(make_registry):
    reg = make_registry(idle_timeout=None)
    fresh = reg.execute(A, "1", reset=True)
    assert not fresh.kernel.state_lost and fresh.kernel.generation == 0, "nothing to reset on a fresh kernel"

    r = reg.execute(A, "2", reset=True)

    assert r.kernel.state_lost and r.kernel.reason == "reset" and r.kernel.generation == 1
    assert r.kernel.kernel_id == fresh.kernel.kernel_id


def test_resolve_fills_in_the_registrys_transport_only_where_none_is_named(registry):
    reg = registry(transport="docker")
    assert reg.resolve(A).transport == "docker"
    named = KernelKey(owner="x", transport="ssh")
    assert reg.resolve(named) is named


def test_stats_count_starts_and_the_peak(registry):
    reg = registry(max_kernels=2)
    for key in (A, B, C):
        kernel_of(reg, key)

    assert reg.stats["started"] == 3 and reg.stats["evicted"] == 1
    assert reg.stats["peak_alive"] == 2, "the evicted kernel ends before the next one starts"


# ------------------------------------------------------------------------------ shutting down
def test_shutdown_all_ends_every_kernel_and_the_registry_stays_usable(registry):
    reg = registry(max_kernels=4)
    handles = [reg.get_or_start(k) for k in (A, B, KernelKey.child("conv-a", "c1"))]

    assert reg.shutdown_all() == 3

    assert all(h.stopping for h in handles) and len(reg) == 0
    r = reg.execute(A, "1")
    assert r.status == "ok" and not r.kernel.state_lost, "a shutdown is not a loss the next kernel reports"


def test_close_ends_every_kernel_and_refuses_later_acquires(registry):
    reg = registry()
    handle = reg.get_or_start(A)
    assert reg in live_registries()

    reg.close()

    assert handle.stopping and len(reg) == 0
    with pytest.raises(KernelShutdownError, match="shut down"):
        reg.execute(A, "1")


# ------------------------------------------------------------------------------ idle expiry
def test_seconds_to_next_expiry_counts_down_from_the_least_recent_idle_kernel(registry, clock):
    reg = registry(idle_timeout=60.0)
    assert reg.seconds_to_next_expiry() is None, "nothing is idle"
    kernel_of(reg, A)
    clock.now += 10
    kernel_of(reg, B)
    clock.now += 5

    assert reg.seconds_to_next_expiry() == pytest.approx(45.0)
    with reg.lease(A):  # a leased kernel does not expire
        assert reg.seconds_to_next_expiry() == pytest.approx(55.0)
    assert registry(idle_timeout=None).seconds_to_next_expiry() is None


def test_reap_expired_ends_only_kernels_idle_past_the_timeout(registry, clock):
    reg = registry(idle_timeout=60.0)
    a = reg.get_or_start(A)
    clock.now += 30
    b = reg.get_or_start(B)
    clock.now += 30  # A has been idle exactly the timeout: not past it

    assert reg.reap_expired() == 0
    clock.now += 0.5
    assert reg.reap_expired() == 1

    assert a.stopping and not b.stopping and owners(reg) == ["conv-b"]
    assert reg.stats["idle_reaped"] == 1


def test_an_acquire_reaps_what_expired_first(registry, clock):
    reg = registry(idle_timeout=60.0)
    a = reg.get_or_start(A)
    clock.now += 61

    reg.get_or_start(B)

    assert a.stopping and owners(reg) == ["conv-b"]


def test_sweep_stale_asks_every_transport_the_registry_used(registry, transport):
    swept: list[float] = []
    transport.sweep_stale = swept.append  # type: ignore[method-assign]
    reg = registry(stale_dir_age=42.0)
    reg.get_or_start(A)
    reg.get_or_start(B)

    reg.sweep_stale()

    assert swept == [42.0], "one sweep per transport, with the registry's age"


def test_stats_count_the_cells_that_ended_their_kernel_by_reason(make_registry):
    reg = make_registry(idle_timeout=None)
    assert reg.execute(A, "1").status == "ok"
    assert reg.execute(A, "raise ValueError('a cell error is no death')").status == "error"
    assert reg.stats["deaths"] == {}

    assert reg.execute(A, "raise SystemExit(3)").status == "exited"
    assert reg.execute(A, "import os\nos._exit(5)").status == "died"
    assert reg.execute(A, "raise SystemExit(0)").status == "exited"

    assert reg.stats["deaths"] == {"exited": 2, "died": 1}


def test_a_cell_interrupted_for_its_budget_on_a_kernel_after_an_eviction_is_no_death(make_registry):
    """Its result reports the eviction (``state_lost``, ``reason="evicted"``) and its namespace kept:
    ``stats["deaths"]`` counted it as a death by eviction (346 in 40 s of 8 threads on 12 keys)."""
    reg = make_registry(idle_timeout=None, max_kernels=1,
                        options=KernelOptions(watchdog=WatchdogPolicy(interrupt_grace=2.0, kill_grace=1.0)))
    reg.execute(A, "1")
    reg.execute(B, "1")  # A's kernel evicted

    r = reg.execute(A, "import time; time.sleep(30)", timeout=0.2)

    assert r.status == "timeout" and r.watchdog == "interrupted" and r.kernel.reason == "evicted", r.summary()
    assert reg.stats["deaths"] == {} and reg.stats["evicted"] == 2


# ------------------------------------------------------------------------------ defaults and key options
def test_a_key_naming_python_or_cwd_gets_a_kernel_with_them(registry, tmp_path):
    from pytest_hermes_kernel.kernel.options import KernelOptions

    reg = registry(options=KernelOptions(python="/opt/default/python", cwd=str(tmp_path)))
    own = reg.get_or_start(KernelKey(owner="own", python="/opt/other/python", cwd="/srv"))
    plain = reg.get_or_start(KernelKey(owner="plain"))

    assert (own.options.python, own.options.cwd) == ("/opt/other/python", "/srv")
    assert (plain.options.python, plain.options.cwd) == ("/opt/default/python", str(tmp_path))


def test_a_default_registry_holds_four_kernels(transport, clock):
    with KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False, clock=clock) as reg:
        for i in range(4):
            reg.get_or_start(KernelKey(owner=f"o{i}"))
        assert len(reg) == 4 and reg.stats["evicted"] == 0
        reg.get_or_start(KernelKey(owner="o4"))
        assert len(reg) == 4 and reg.stats["evicted"] == 1


def test_stale_kernel_dirs_are_swept_after_a_week_by_default(transport, clock):
    swept: list[float] = []
    transport.sweep_stale = swept.append  # type: ignore[method-assign]
    with KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False, clock=clock) as reg:
        reg.get_or_start(A)
        reg.sweep_stale()
    assert swept == [7 * 24 * 3600.0]


@pytest.mark.parametrize("idle, every", [(60.0, 30.0), (600.0, 100.0), (6000.0, 300.0)])
def test_the_background_sweep_interval_is_a_sixth_of_the_idle_timeout_within_30_to_300_s(transport, idle, every):
    reg = KernelRegistry(transport_factory=lambda _key: transport, idle_timeout=idle)
    try:
        assert reg._reaper is not None and reg._reaper._sweep_every == every  # the documented default
    finally:
        reg.close()


def test_a_fresh_registry_counts_nothing(registry):
    assert registry().stats == {"started": 0, "peak_alive": 0, "evicted": 0, "idle_reaped": 0, "deaths": {},
                                "unconfirmed_ends": 0, "losses_forgotten": 0}


def test_pinned_is_a_keyword_only_argument(registry):
    reg = registry()
    with pytest.raises(TypeError):
        reg.lease(A, True).__enter__()
    with pytest.raises(TypeError):
        reg.get_or_start(A, True)
    with reg.lease(A, pinned=True):
        pass
    assert [s.pinned for s in reg.snapshot()] == [True]


# ------------------------------------------------------------------------------ one kernel per key, also while dying
class SlowReapTransport(FakeTransport):
    """A fake whose reap of an ended runner waits for the test (a kernel slow to die)."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []
        self.reaping, self.let_die = threading.Event(), threading.Event()

    def launch(self, spec):
        launched = super().launch(spec)
        self.events.append(f"launch {launched.pid}")
        return launched

    def reap(self, launched, timeout: float) -> bool:
        self.reaping.set()
        self.let_die.wait(30)
        self.events.append(f"dead {launched.pid}")
        return super().reap(launched, timeout)


def test_a_keys_next_kernel_starts_only_once_its_last_one_is_dead(clock):
    transport = SlowReapTransport()
    with KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False, clock=clock) as reg:
        old = reg.get_or_start(A)
        ending = threading.Thread(target=reg.discard, args=(A, old))
        ending.start()
        assert transport.reaping.wait(10), "the old kernel's shutdown began"
        starting = threading.Thread(target=reg.get_or_start, args=(A,))
        starting.start()  # the key's next kernel is asked for while the old one is dying

        assert stays_true(lambda: transport.events == ["launch 1001"], 0.5), "no second kernel while the first dies"
        transport.let_die.set()
        ending.join(10)
        starting.join(10)

        assert transport.events == ["launch 1001", "dead 1001", "launch 1002"]



def test_a_keys_next_kernel_waits_three_shutdown_graces_and_10_s_for_its_predecessor_then_starts(clock, monkeypatch):
    """The wait for a predecessor that does not die is bounded by the longest its shutdown ladder
    can take (request, SIGTERM, SIGKILL: ``shutdown_grace`` each, plus 10 s): the key's next kernel
    starts after that, not never. The bound is observed, not waited out: the old kernel's burial
    records the timeout it is waited with and answers at once, as if it had passed."""
    bounds: list[float | None] = []

    class Burial(threading.Event):
        def wait(self, timeout: float | None = None) -> bool:
            bounds.append(timeout)
            return super().wait(0)

    @dataclass
    class Entry(registry_module._Entry):
        buried: threading.Event = field(default_factory=Burial)

    monkeypatch.setattr(registry_module, "_Entry", Entry)
    transport = SlowReapTransport()
    with KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False, clock=clock,
                        options=KernelOptions(shutdown_grace=30.0)) as reg:
        old = reg.get_or_start(A)
        ending = threading.Thread(target=reg.discard, args=(A, old))
        ending.start()
        assert transport.reaping.wait(10), "the old kernel's shutdown began"

        try:
            new = reg.get_or_start(A)  # the old one is still dying (its reap waits for the test)

            assert bounds == [30.0 * 3 + 10.0]
            assert transport.events == ["launch 1001", "launch 1002"] and new is not old
        finally:
            transport.let_die.set()
            ending.join(10)

def test_registries_left_open_are_closed_at_interpreter_exit(tmp_path):
    script = tmp_path / "left_open.py"
    script.write_text(
        "from pytest_hermes_kernel.kernel.registry import KernelKey, KernelRegistry\n"
        "from pytest_hermes_kernel.transports.local import LocalTransport\n"
        "transport = LocalTransport()  # its own, not a shared one (whose exit hook closes registries too)\n"
        "reg = KernelRegistry(max_kernels=2, transport_factory=lambda key: transport)\n"
        "reg.listener = lambda event, handle, payload: event == 'shutdown' and print('shut', payload.step, flush=True)\n"
        "print(reg.execute(KernelKey(owner='o'), '6 * 7').value, flush=True)\n")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})

    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["42", "shut", "request"], "the kernel was shut down politely at exit"


@pytest.mark.skipif(not hasattr(atexit, "_ncallbacks"), reason="counts CPython's atexit hooks")
def test_registries_made_and_closed_leave_no_exit_hook_behind(transport):
    """A host making a registry per session and closing it kept one atexit hook (and a weakref) for
    every registry it ever made: 108 objects more per 100 registries, never shrinking."""
    before = atexit._ncallbacks()
    for _ in range(60):
        with KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False) as reg:
            assert reg.execute(A, "1").value == "1"

    assert atexit._ncallbacks() - before <= 1, f"{atexit._ncallbacks() - before} exit hooks of 60 closed registries"


def test_a_handle_its_registry_evicted_says_so_when_used_again(registry):
    reg = registry(max_kernels=1)
    handle_a = reg.get_or_start(A)  # the owner keeps the handle, as the README's shared-kernel example does
    reg.get_or_start(B)  # over the cap: A goes

    with pytest.raises(KernelShutdownError, match=r"is shut down: evicted by its registry \(over max_kernels=1"):
        handle_a.execute("1")


def test_a_handle_its_registry_reaped_says_so_when_used_again(registry, clock):
    reg = registry(idle_timeout=60.0)
    handle_a = reg.get_or_start(A)
    clock.now += 61
    assert reg.reap_expired() == 1

    with pytest.raises(KernelShutdownError, match=r"is shut down: reaped by its registry \(unused for idle_timeout=60.0 s"):
        handle_a.execute("1")


def test_a_handle_its_owner_shut_down_says_no_more_than_that(registry):
    reg = registry(max_kernels=1)
    handle_a = reg.get_or_start(A)
    handle_a.shutdown()
    reg.get_or_start(B)  # A's entry is evicted after its own shutdown: the first end's words stay

    with pytest.raises(KernelShutdownError, match=r"is shut down$"):
        handle_a.execute("1")
