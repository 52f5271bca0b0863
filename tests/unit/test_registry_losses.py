"""The registry's loss reporting, over an in-process fake runner (no processes, no sleeps).

A key whose kernel the registry evicted or reaped gets ``state_lost`` with that reason on its
next cell, whichever way the cell is run: the registry tells the key's next kernel
(``KernelHandle.mark_lost``); it never edits a result.
"""

from __future__ import annotations

import gc
import socket
import threading
from typing import Any

import pytest

from pytest_hermes_kernel.errors import ConfigError, KernelStartError
from pytest_hermes_kernel.kernel.channel import SocketStream
from pytest_hermes_kernel.kernel.contract import Launched, LaunchSpec, Transport
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.kernel.lifecycle import KernelState, Loss
from pytest_hermes_kernel.kernel.options import KernelOptions
from pytest_hermes_kernel.kernel import registry as registry_module
from pytest_hermes_kernel.kernel.registry import KernelKey, KernelRegistry
from pytest_hermes_kernel.kernel.results import FrameDecoder, encode_frame

A, B = KernelKey(owner="conv-a"), KernelKey(owner="conv-b")


class FakeRunner(threading.Thread):
    """Speaks the runner's side of the channel: hello, then results for every cell."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        super().__init__(daemon=True, name=f"fake-runner-{pid}")
        self.sock, self.pid, self.count = sock, pid, 0
        self.namespace: dict[str, Any] = {}

    def run(self) -> None:
        self.sock.sendall(encode_frame({"type": "hello", "worker_pid": self.pid, "replayed": [], "running": None}))
        decoder = FrameDecoder()
        while data := self.sock.recv(1 << 16):
            decoder.feed(data)
            while (frame := decoder.next_frame()) is not None:
                if not self.answer(frame[0]):
                    self.sock.close()
                    return

    def answer(self, msg: dict[str, Any]) -> bool:
        kind, rid = msg.get("type"), msg.get("id")
        if kind == "execute":
            self.count += 1
            reply = {"type": "result", "id": rid, "status": "ok", "execution_count": self.count,
                     "worker_pid": self.pid}
            try:
                reply["value"] = repr(eval(msg["code"], self.namespace))  # noqa: S307 - test double
            except NameError as exc:
                reply.update(status="error", ename="NameError", evalue=str(exc))
            self.sock.sendall(encode_frame(reply, (b"", b"", b"", b"")))
        elif kind == "shutdown":
            self.sock.sendall(encode_frame({"type": "bye", "id": rid, "step": "request", "exit_code": 0}))
            return False
        return True


class FakeTransport(Transport):
    """Each launch is a fresh :class:`FakeRunner` on a socketpair; ``fail_next`` fails launches."""

    name = "fake"

    def __init__(self) -> None:
        self.launches = 0
        self.fail_next = 0
        self.runners: list[FakeRunner] = []

    def launch(self, spec: LaunchSpec) -> Launched:
        if self.fail_next:
            self.fail_next -= 1
            raise KernelStartError("the fake runner refused to start")
        self.launches += 1
        host_end, runner_end = socket.socketpair()
        runner = FakeRunner(runner_end, pid=1000 + self.launches)
        runner.start()
        self.runners.append(runner)
        return Launched(stream=SocketStream(host_end), pid=runner.pid, label=f"fake {runner.pid}",
                        extra={"runner": runner})

    def kill(self, launched: Launched) -> bool:
        return True

    def alive(self, launched: Launched) -> bool:
        return launched.extra["runner"].is_alive()

    def reap(self, launched: Launched, timeout: float) -> bool:
        launched.extra["runner"].join(timeout)
        return not self.alive(launched)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def transport() -> FakeTransport:
    return FakeTransport()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def registry(transport: FakeTransport, clock: Clock):
    made: list[KernelRegistry] = []

    def make(**kwargs: Any) -> KernelRegistry:
        reg = KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False, clock=clock,
                             **kwargs)
        made.append(reg)
        return reg

    yield make
    for reg in made:
        reg.close()


def test_an_evicted_keys_next_cell_says_state_lost_reason_evicted(registry, transport):
    reg = registry(max_kernels=1, idle_timeout=None)
    first = reg.execute(A, "1")
    reg.execute(B, "2")  # over the cap of 1: A's kernel is evicted

    again = reg.execute(A, "3")
    after = reg.execute(A, "4")

    assert not first.kernel.state_lost
    assert again.kernel.state_lost and again.kernel.reason == "evicted" and "evicted" in again.kernel.note
    assert not after.kernel.state_lost, "the loss is reported once, by the next cell"
    assert again.kernel.kernel_id != first.kernel.kernel_id and transport.launches == 3
    assert reg.stats["evicted"] == 2  # A for B, then B for A


def test_an_idle_reaped_keys_next_cell_says_state_lost_reason_idle_reaped(registry, clock):
    reg = registry(idle_timeout=10.0)
    reg.execute(A, "1")
    clock.now += 3600

    assert reg.reap_once() == 1
    again = reg.execute(A, "2")

    assert again.kernel.state_lost and again.kernel.reason == "idle_reaped"
    assert "idle reaped" in again.kernel.note and reg.stats["idle_reaped"] == 1


def test_a_cell_run_through_a_lease_reports_the_loss_too(registry):
    reg = registry(max_kernels=1, idle_timeout=None)
    reg.execute(A, "1")
    reg.execute(B, "2")

    with reg.lease(A) as handle:
        r = handle.execute("3")

    assert r.kernel.state_lost and r.kernel.reason == "evicted"


def test_the_loss_survives_a_failed_start_of_the_keys_next_kernel(registry, transport):
    reg = registry(max_kernels=1, idle_timeout=None)
    reg.execute(A, "1")
    reg.execute(B, "2")
    transport.fail_next = 1

    with pytest.raises(KernelStartError):
        reg.execute(A, "3")
    r = reg.execute(A, "4")

    assert r.kernel.state_lost and r.kernel.reason == "evicted"


class UnconfirmingTransport(FakeTransport):
    """Its runners answer the shutdown request, but it never sees one end (a paused host)."""

    def kill(self, launched: Launched) -> bool:
        return False

    def seen_gone(self, launched: Launched) -> bool:
        return False

    def reap(self, launched: Launched, timeout: float) -> bool:
        return False


def test_an_evicted_kernel_not_seen_gone_is_counted_and_its_keys_next_cell_says_so(clock):
    transport = UnconfirmingTransport()
    reg = KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False, clock=clock,
                         max_kernels=1, idle_timeout=None, options=KernelOptions(shutdown_grace=0.1))
    try:
        reg.execute(A, "1")
        reg.execute(B, "2")  # over the cap of 1: A's kernel is evicted, its end not confirmed

        again = reg.execute(A, "3")
    finally:
        reg.close()

    assert again.kernel.reason == "evicted" and "may still run" in again.kernel.note, again.kernel.note
    assert reg.stats["unconfirmed_ends"] == 3  # A, then B (evicted for A), then A at close


def test_a_handle_reports_a_marked_loss_on_its_next_cell_only(transport):
    with KernelHandle(transport).start() as k:
        assert k.state is KernelState.IDLE
        k.mark_lost(Loss(reason="evicted", note="the previous kernel for this key was evicted"))

        r1, r2 = k.execute("1"), k.execute("2")

        assert r1.kernel.state_lost and r1.kernel.reason == "evicted" and r1.kernel.note.endswith("evicted")
        assert not r2.kernel.state_lost
    assert k.state is KernelState.CLOSED


@pytest.mark.parametrize("bad", [{"max_kernels": 0}, {"max_kernels": -1}, {"max_kernels": 2.5},
                                 {"idle_timeout": -1.0},
                                 # True was taken as 1 s, inf as no reap: as every other duration, refused
                                 {"idle_timeout": True}, {"idle_timeout": float("inf")}, {"idle_timeout": "60"}])
def test_bad_registry_settings_are_config_errors(transport, bad):
    with pytest.raises(ConfigError, match=next(iter(bad))):
        KernelRegistry(transport_factory=lambda _key: transport, background_reaper=False, **bad)


def _losses_alive() -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, Loss))


CONVERSATIONS = 60


def test_keys_that_never_come_back_leave_at_most_lost_kept_losses(registry, monkeypatch):
    """An agent host with one key per conversation, over the cap: each eviction kept the key's loss
    for its next cell, for ever (the key never came back): 80 per 100 conversations in
    ``benchmarks/soak.py``, never shrinking. The newest ``LOST_KEPT`` are kept."""
    monkeypatch.setattr(registry_module, "LOST_KEPT", 8, raising=False)
    reg = registry(max_kernels=1, idle_timeout=None)
    before = _losses_alive()
    for i in range(CONVERSATIONS):
        assert reg.execute(KernelKey(owner=f"conv-{i}"), "1").value == "1"

    assert _losses_alive() - before <= 8, f"{_losses_alive() - before} losses kept after {CONVERSATIONS} conversations"
    assert reg.stats["losses_forgotten"] == reg.stats["evicted"] - 8, reg.stats  # a forgotten loss is counted
    again = reg.execute(KernelKey(owner=f"conv-{CONVERSATIONS - 3}"), "2")  # a recent one still hears of its loss
    assert again.kernel.state_lost and again.kernel.reason == "evicted"


def test_a_conversation_shut_down_by_its_owner_leaves_no_loss_behind(registry):
    """``shutdown_owner`` at a conversation's end forgot nothing of a kernel the registry had already
    evicted: one loss per conversation stayed. Its owner ended it on purpose: its next kernel,
    if it ever comes, is a fresh one (as after ``shutdown_owner`` of a live kernel)."""
    reg = registry(max_kernels=1, idle_timeout=None)
    before = _losses_alive()
    for i in range(CONVERSATIONS):
        reg.execute(KernelKey(owner=f"conv-{i}"), "1")
        if i:
            reg.shutdown_owner(f"conv-{i - 1}")  # evicted by conv-i's kernel already

    assert _losses_alive() - before <= 1, f"{_losses_alive() - before} losses kept after {CONVERSATIONS} conversations"
    r = reg.execute(KernelKey(owner="conv-0"), "2")
    assert r.status == "ok" and not r.kernel.state_lost, r.kernel
