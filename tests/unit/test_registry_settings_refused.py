"""A registry's own settings that would be read wrongly are refused when it is made, naming the
setting (found by a breaker helper on 2026-12-05): ``reap_interval=-1`` or ``nan`` was taken and
its idle reaper thread then woke without a pause for the registry's whole life (a core's worth of
CPU, measured 0.67-0.95 CPU-s per idle second); a ``transport_factory`` or ``clock`` that cannot
be called (a transport's name, a transport instance) was taken and the first cell raised a bare
``TypeError: 'str' object is not callable``."""

from __future__ import annotations

import threading

import pytest

from pytest_hermes_kernel import KernelRegistry
from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.transports.local import LocalTransport


def _reapers() -> set[threading.Thread]:
    """The reaper threads alive now (a set of threads, not a count: one that was ending when the
    test began, another registry's, is in ``before`` and gone after; a count then said "fewer")."""
    return {t for t in threading.enumerate() if t.name == "hermes-kernel-idle-reaper" and t.is_alive()}


@pytest.mark.parametrize("setting, value", [
    ("reap_interval", -1), ("reap_interval", float("nan")), ("reap_interval", float("inf")),
    ("reap_interval", True), ("reap_interval", "30"),
    ("stale_dir_age", float("nan")), ("stale_dir_age", -5),
])
def test_a_bad_reaping_setting_is_refused_before_a_reaper_starts(setting, value):
    before = _reapers()
    with pytest.raises(ConfigError, match=f"{setting} must be"):
        KernelRegistry(**{setting: value})
    assert not _reapers() - before, "a refused registry left its reaper thread running"


@pytest.mark.parametrize("factory, says", [
    ("local", "a transport's name goes in KernelRegistry(transport='local') or KernelKey(transport='local')"),
    (5, "got int 5"),
])
def test_a_transport_factory_that_cannot_be_called_is_refused_saying_what_to_pass(factory, says):
    with pytest.raises(TypeError, match=r"transport_factory must be a callable key -> Transport") as caught:
        KernelRegistry(transport_factory=factory)
    assert says in str(caught.value), str(caught.value)


def test_a_transport_instance_as_the_factory_is_told_to_wrap_it():
    transport = LocalTransport(server=False)
    try:
        with pytest.raises(TypeError, match=r"lambda key: transport"):
            KernelRegistry(transport_factory=transport)
    finally:
        transport.close()


def test_a_clock_that_cannot_be_called_is_refused():
    with pytest.raises(TypeError, match="clock must be a callable"):
        KernelRegistry(clock="monotonic")


def test_the_settings_as_meant_pass():
    with KernelRegistry(reap_interval=30.0, stale_dir_age=0, transport_factory=lambda key: None) as registry:
        assert registry.stale_dir_age == 0


def test_a_reset_that_is_no_bool_is_refused_and_runs_nothing():
    """``registry.execute(key, code, reset="no")`` restarted the kernel ("no" is true): its state lost to a word."""
    from pytest_hermes_kernel.api import KernelRegistry
    from pytest_hermes_kernel.kernel.registry import KernelKey

    with KernelRegistry() as registry:
        key = KernelKey(owner="t")
        registry.execute(key, "x = 1")
        with pytest.raises(TypeError, match="reset must be a bool, not str 'no'; nothing was run"):
            registry.execute(key, "x = 2", reset="no")  # type: ignore[arg-type]
        kept = registry.execute(key, "x")
        assert (kept.value, kept.kernel.state_lost) == ("1", False), kept.summary()


@pytest.mark.parametrize("value", [None, 5])
def test_a_default_transport_that_is_no_name_is_refused_when_the_registry_is_made(value):
    # KernelRegistry's docstring: ":raises ConfigError: for ... a bad setting"; transport=None was
    # taken and the first cell raised "a transport name is a str, not NoneType None" (5: "KernelKey
    # transport must be a str or None"), after the registry's reaper had started (2026-12-06)
    before = _reapers()
    with pytest.raises(ConfigError, match="transport must be a transport's name"):
        KernelRegistry(transport=value)
    assert not _reapers() - before, "a refused registry left its reaper thread running"


@pytest.mark.parametrize("pinned", ["no", 0, 1])
def test_a_pinned_that_is_no_bool_is_refused_before_a_kernel_starts(pinned):
    # lease(key, pinned="no") pinned the kernel (a true str), exempt from eviction for ever: its
    # snapshot said pinned='no' (a docstring check, 2026-12-06)
    from pytest_hermes_kernel import KernelKey

    with KernelRegistry(background_reaper=False) as registry:
        with pytest.raises(TypeError, match="pinned must be True, False or None"):
            registry.get_or_start(KernelKey(owner="a"), pinned=pinned)
        assert registry.snapshot() == [] and registry.stats["started"] == 0
        registry.get_or_start(KernelKey(owner="b"), pinned=False)
        registry.get_or_start(KernelKey.child("b", "c1"))
        assert [(s.key.owner, s.pinned) for s in registry.snapshot()] == [("b", False), ("b::child::c1", True)]
