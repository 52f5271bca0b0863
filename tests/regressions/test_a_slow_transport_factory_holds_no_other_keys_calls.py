"""A registry's transport factory runs outside the registry's lock.

A key's first cell makes its kernel's transport (``transport_factory(key)``; the default one is
``get_transport(key.transport)``, which for docker asks the engine: a slow or silent engine makes
that take seconds). It ran under the registry's lock, so in a long-lived host serving many keys
every other key's calls waited for it: the end of each running cell (its lease's release),
``snapshot()``, a new key's start. A fast key's cell took 2.7 s while another key's 3-s factory
ran, and here stayed blocked for as long as the factory did. Now the factory runs outside the
lock, still once per new entry (the key's other callers wait for that one), and a ``close()``
meanwhile starts no kernel.
"""

from __future__ import annotations

import threading
import time

import pytest

from pytest_hermes_kernel import KernelKey
from pytest_hermes_kernel.errors import KernelShutdownError
from pytest_hermes_kernel.transports import get_transport

HELD_S = 20.0  # how long the slow factory holds at most (it is let go as soon as the test has looked)


class SlowFactory:
    """Makes the transport of the ``slow`` key only once let go; counts its calls per owner."""

    def __init__(self) -> None:
        self.entered, self.release = threading.Event(), threading.Event()
        self.calls: dict[str, int] = {}

    def __call__(self, key: KernelKey):
        self.calls[key.owner] = self.calls.get(key.owner, 0) + 1
        if key.owner == "slow":
            self.entered.set()
            self.release.wait(HELD_S)
        return get_transport("local")


def _in_thread(call) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - looked at by the test
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, out


def test_other_keys_calls_go_on_while_a_keys_transport_is_made(make_registry) -> None:
    factory = SlowFactory()
    reg = make_registry(transport_factory=factory, max_kernels=8)
    fast = KernelKey(owner="fast", transport="local")
    assert reg.execute(fast, "x = 1").status == "ok"
    slow_callers = [_in_thread(lambda: reg.execute(KernelKey(owner="slow", transport="local"), "40 + 2"))
                    for _ in range(3)]
    try:
        assert factory.entered.wait(30)
        t0 = time.monotonic()
        thread, out = _in_thread(lambda: [reg.execute(fast, "x += 1").status for _ in range(5)]
                                 + [reg.execute(KernelKey(owner="new", transport="local"), "1").status]
                                 + [len(reg.snapshot())])
        thread.join(5.0)
        took = time.monotonic() - t0
        assert not thread.is_alive(), (f"another key's cells, a new key's start and snapshot() still waited "
                                       f"after {took:.1f} s for the slow key's transport factory")
        assert out == {"value": ["ok"] * 6 + [2]}, out  # fast and new: the slow key has no entry until its transport is made
    finally:
        factory.release.set()
    for thread, out in slow_callers:
        thread.join(60)
        assert out == {"value": out.get("value")} and out["value"].value == "42", out
    assert factory.calls == {"fast": 1, "slow": 1, "new": 1}, "one factory call per new entry"
    assert len({out["value"].kernel.kernel_id for _, out in slow_callers}) == 1, "one kernel for the key"
    assert reg.execute(fast, "x").value == "6"


def test_close_while_a_keys_transport_is_made_starts_no_kernel(make_registry) -> None:
    factory = SlowFactory()
    reg = make_registry(transport_factory=factory)
    thread, out = _in_thread(lambda: reg.execute(KernelKey(owner="slow", transport="local"), "1"))
    try:
        assert factory.entered.wait(30)
        closer, closed = _in_thread(reg.close)
        closer.join(10)
        assert not closer.is_alive(), "close() waited for the transport factory"
    finally:
        factory.release.set()
    thread.join(60)
    assert isinstance(out.get("error"), KernelShutdownError), out
    assert reg.snapshot() == [] and reg.stats["started"] == 0
    with pytest.raises(KernelShutdownError):
        reg.execute(KernelKey(owner="later", transport="local"), "1")


def test_a_shared_transport_being_made_holds_no_other_names(make_registry) -> None:
    """``get_transport(name)`` made a shared transport under the one lock of every name: a new local
    key's start waited 2.7 s while another thread's first docker key made its transport (3 s)."""
    import uuid

    from pytest_hermes_kernel.transports import register_transport, transport_factory

    local, entered, release, calls = transport_factory("local"), threading.Event(), threading.Event(), []

    def slow(**options):
        calls.append(options)
        entered.set()
        release.wait(HELD_S)
        return local(**options)

    name = f"slow-{uuid.uuid4().hex[:8]}"
    register_transport(name, slow)
    get_transport("local")
    makers = [_in_thread(lambda: get_transport(name)) for _ in range(2)]
    reg = make_registry()
    try:
        assert entered.wait(30)
        thread, out = _in_thread(lambda: reg.execute(KernelKey(owner="new-local", transport="local"), "1").status)
        thread.join(5.0)
        assert not thread.is_alive(), f"a local key's start waited for the {name} transport being made"
        assert out == {"value": "ok"}, out
    finally:
        release.set()
    for thread, _ in makers:
        thread.join(60)
    assert makers[0][1]["value"] is makers[1][1]["value"] is get_transport(name), "one shared instance"
    assert len(calls) == 1, "made once"


class _CtrlCAsTheMakingIsMarked:
    """A lock whose first release after a making was marked raises ``KeyboardInterrupt`` (a Ctrl-C that
    lands as the lock is let go: Python runs a signal's handler there)."""

    def __init__(self, lock, marked) -> None:
        self.lock, self.marked, self.fired = lock, marked, False

    def __enter__(self):
        self.lock.__enter__()
        return self

    def __exit__(self, *exc):
        self.lock.__exit__(*exc)
        if not self.fired and self.marked():
            self.fired = True
            raise KeyboardInterrupt


def test_a_ctrl_c_as_a_making_is_marked_leaves_none_behind(make_registry, monkeypatch) -> None:
    """The making of a key's transport, and of a shared transport, is marked under the lock; a Ctrl-C
    as that lock was let go left the mark, and every later call of that key (or name) waited for ever."""
    import uuid

    import pytest_hermes_kernel.transports as transports
    from pytest_hermes_kernel.transports import register_transport, transport_factory

    reg = make_registry(transport_factory=lambda key: get_transport("local"))
    reg._lock = _CtrlCAsTheMakingIsMarked(reg._lock, lambda: bool(reg._making))
    key = KernelKey(owner="ctrl-c", transport="local")
    with pytest.raises(KeyboardInterrupt):
        reg.execute(key, "1")
    thread, out = _in_thread(lambda: reg.execute(key, "40 + 2").value)
    thread.join(30)
    assert out == {"value": "42"}, f"the key's next call {'still waits' if thread.is_alive() else out}"

    name = f"ctrl-c-{uuid.uuid4().hex[:8]}"
    register_transport(name, transport_factory("local"))
    monkeypatch.setattr(transports, "_lock", _CtrlCAsTheMakingIsMarked(transports._lock, lambda: bool(transports._making)))
    with pytest.raises(KeyboardInterrupt):
        get_transport(name)
    thread, out = _in_thread(lambda: get_transport(name))
    thread.join(30)
    assert not thread.is_alive() and "value" in out, f"the name's next get_transport {'still waits' if thread.is_alive() else out}"
