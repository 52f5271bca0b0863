"""FaultyTransport: a decorator transport whose streams can be reset, black-holed or slowed.

DESIGN.md section 8: a drop faults the streams open now; the stream a re-attach opens is a fresh,
unfaulted one (the runner kept its state), and a timed or healed blackhole lets the bytes flow
again. The inner transport here hands out one end of a socketpair per stream and keeps the
other end as "the runner".
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, ClassVar

import pytest

from pytest_hermes_kernel.errors import ConfigError
from pytest_hermes_kernel.faults.faulty_transport import FaultyStream, FaultyTransport
from pytest_hermes_kernel.faults.proxy import ProxyRoute
from pytest_hermes_kernel.kernel.contract import ByteStream, Launched, LaunchSpec, Transport


class SockStream:
    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def recv(self, timeout: float | None) -> bytes:
        try:
            self.sock.settimeout(timeout)
            return self.sock.recv(65536)
        except TimeoutError:
            raise
        except OSError:  # closed by us: end of stream
            return b""

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


class Recording(Transport):
    """A re-attachable transport that records every call and the launch record it was given."""

    name: ClassVar[str] = "recording"
    reattachable: ClassVar[bool] = True

    def __init__(self) -> None:
        self.orphan_timeout = 7.0
        self.calls: list[tuple[str, Any]] = []
        self.runners: list[socket.socket] = []  # the far end of every stream handed out
        self.streams: list[SockStream] = []  # our end of every stream handed out

    def _pair(self) -> ByteStream:
        ours, theirs = socket.socketpair()
        self.runners.append(theirs)
        self.streams.append(SockStream(ours))
        return self.streams[-1]

    def launch(self, spec: LaunchSpec) -> Launched:
        self.calls.append(("launch", spec.kernel_id))
        return Launched(stream=self._pair(), pid=4242, kernel_dir="/k", label="recording", extra={"id": spec.kernel_id})

    def reattach(self, launched: Launched) -> ByteStream:
        self.calls.append(("reattach", launched))
        return self._pair()

    def kill(self, launched: Launched) -> bool:
        self.calls.append(("kill", launched))
        return True

    def alive(self, launched: Launched) -> bool:
        self.calls.append(("alive", launched))
        return True

    def reap(self, launched: Launched, timeout: float) -> bool:
        self.calls.append(("reap", launched))
        return True

    def cleanup(self, launched: Launched) -> None:
        self.calls.append(("cleanup", launched))

    def runner_log(self, launched: Launched, lines: int = 20) -> str:
        self.calls.append(("runner_log", launched))
        return "log"

    def sweep_stale(self, max_age_s: float) -> int:
        self.calls.append(("sweep_stale", max_age_s))
        return 3

    def locator(self, launched: Launched) -> dict[str, Any]:
        self.calls.append(("locator", launched))
        return {"where": "here"}

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        self.calls.append(("kernel_processes", (kernel_id, locator)))
        return ["1: python"]

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        self.calls.append(("leak_snapshot", host_pid))
        # only to the test's own ask: the plugin's leak check probes this transport too (it launched)
        return {"container": {"c1": "a container"}} if host_pid == 99 else {}

    def leak_cleanup(self, kind: str, identity: str) -> None:
        self.calls.append(("leak_cleanup", (kind, identity)))

    def signal_pid(self, launched: Launched | None, pid: int, sig: int) -> None:
        self.calls.append(("signal_pid", (launched, pid, sig)))

    def describe(self) -> str:
        return "recording transport"

    def close(self) -> None:
        self.calls.append(("close", None))


@pytest.fixture
def inner() -> Any:
    transport = Recording()
    yield transport
    for sock in transport.runners:
        sock.close()
    for stream in transport.streams:  # close() is idempotent: some tests closed theirs already
        stream.close()


def spec(kernel_id: str = "k1") -> LaunchSpec:
    return LaunchSpec(kernel_id=kernel_id, config={}, env={})


def echo_works(stream: ByteStream, runner: socket.socket) -> bool:
    stream.send(b"ping")
    runner.settimeout(2.0)
    if runner.recv(16) != b"ping":
        return False
    runner.sendall(b"pong")
    return stream.recv(2.0) == b"pong"


def test_the_port_is_delegated_with_the_inner_launch_record(inner: Recording) -> None:
    faulty = FaultyTransport(inner)
    assert (faulty.name, faulty.reattachable, faulty.orphan_timeout, faulty.runs_on_this_host) == ("recording", True, 7.0, False)
    launched = faulty.launch(spec())
    assert isinstance(launched.stream, FaultyStream) and (launched.pid, launched.kernel_dir) == (4242, "/k")
    assert faulty.kill(launched) and faulty.alive(launched) and faulty.reap(launched, 1.0)
    assert faulty.runner_log(launched) == "log" and faulty.locator(launched) == {"where": "here"}
    faulty.signal_pid(launched, 5, 9)
    faulty.signal_pid(None, 6, 9)
    assert faulty.sweep_stale(60.0) == 3 and faulty.kernel_processes("k1", {"a": 1}) == ["1: python"]
    assert "recording transport" in faulty.describe()
    assert faulty.leak_snapshot(99) == {"container": {"c1": "a container"}}
    faulty.leak_cleanup("container", "c1")
    faulty.cleanup(launched)
    faulty.close()
    given = [arg for call, arg in inner.calls if call in ("kill", "alive", "reap", "runner_log", "locator", "cleanup")]
    assert all(isinstance(g, Launched) and not isinstance(g.stream, FaultyStream) for g in given), given
    assert ("signal_pid", (None, 6, 9)) in inner.calls and ("close", None) in inner.calls
    assert ("leak_snapshot", 99) in inner.calls and ("leak_cleanup", ("container", "c1")) in inner.calls


def test_reset_breaks_the_stream_and_reattach_gives_a_fresh_unfaulted_one(inner: Recording) -> None:
    faulty = FaultyTransport(inner)
    launched = faulty.launch(spec())
    assert echo_works(launched.stream, inner.runners[0])

    faulty.drop("reset")
    with pytest.raises(ConnectionResetError):
        launched.stream.recv(1.0)
    with pytest.raises(ConnectionResetError):
        launched.stream.send(b"x")

    fresh = faulty.reattach(launched)
    assert isinstance(fresh, FaultyStream) and fresh.active() is None
    assert echo_works(fresh, inner.runners[1]), "the re-attached stream carries bytes"
    faulty.drop("reset")  # a later drop hits the stream open now
    with pytest.raises(ConnectionResetError):
        fresh.recv(1.0)


def test_blackhole_silences_both_ways_until_healed(inner: Recording) -> None:
    faulty = FaultyTransport(inner)
    launched = faulty.launch(spec())
    runner = inner.runners[0]
    faulty.drop("blackhole")
    launched.stream.send(b"lost")  # vanishes: no error, nothing arrives
    runner.sendall(b"held")
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        launched.stream.recv(0.3)
    # recv's timeout is its contract: 5 s of slack for a loaded machine (it was 1.7 s)
    assert 0.25 <= time.monotonic() - started < 0.3 + 5.0, "a silent peer times the read out, it does not hang"
    runner.settimeout(0.2)
    with pytest.raises(TimeoutError):
        runner.recv(16)

    faulty.heal()
    assert launched.stream.recv(2.0) == b"held"
    assert echo_works(launched.stream, runner)


def test_a_timed_blackhole_ends_by_itself(inner: Recording) -> None:
    faulty = FaultyTransport(inner)
    launched = faulty.launch(spec())
    faulty.drop("blackhole", duration=0.3)
    inner.runners[0].sendall(b"late")
    assert launched.stream.recv(5.0) == b"late", "the read resumes once the blackhole is over"


def test_close_ends_a_blackholed_read_at_once(inner: Recording) -> None:
    faulty = FaultyTransport(inner)
    launched = faulty.launch(spec())
    faulty.drop("blackhole")
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(launched.stream.recv(None)))
    reader.start()
    reader.join(0.3)
    assert reader.is_alive(), "a read with no timeout stays blocked while the peer is silent"
    launched.stream.close()
    reader.join(2.0)
    assert not reader.is_alive() and got == [b""]


def test_latency_delays_every_read(inner: Recording) -> None:
    faulty = FaultyTransport(inner)
    launched = faulty.launch(spec())
    faulty.drop("latency", latency=0.3)
    inner.runners[0].sendall(b"slow")
    started = time.monotonic()
    assert launched.stream.recv(2.0) == b"slow"
    assert time.monotonic() - started >= 0.3


def test_a_drop_aimed_at_one_kernel_leaves_the_others_alone(inner: Recording) -> None:
    faulty = FaultyTransport(inner)
    one, two = faulty.launch(spec("k1")), faulty.launch(spec("k2"))
    faulty.drop("reset", launched=one)
    with pytest.raises(ConnectionResetError):
        one.stream.recv(0.5)
    assert echo_works(two.stream, inner.runners[1])


def test_drops_are_refused_where_they_cannot_apply(inner: Recording) -> None:
    with pytest.raises(ConfigError, match="has a channel yet"):
        FaultyTransport(inner).drop("reset")

    class Lease(Recording):
        reattachable: ClassVar[bool] = False

    with pytest.raises(ConfigError, match="does not apply to the recording transport"):
        FaultyTransport(Lease()).drop("reset")


def test_with_a_proxy_link_the_drop_cuts_the_link_not_the_stream(inner: Recording) -> None:
    class Proxy:
        def __init__(self) -> None:
            self.calls: list[tuple[str, Any]] = []

        def reset(self) -> int:
            self.calls.append(("reset", None))
            return 1

        def blackhole(self, duration: float | None) -> None:
            self.calls.append(("blackhole", duration))

        def latency(self, seconds: float, duration: float | None) -> None:
            self.calls.append(("latency", (seconds, duration)))

        def heal(self) -> None:
            self.calls.append(("heal", None))

    route = ProxyRoute()
    route.proxy = proxy = Proxy()  # type: ignore[assignment]
    faulty = FaultyTransport(inner, link=route)
    launched = faulty.launch(spec())
    faulty.drop("reset")
    faulty.drop("blackhole", duration=2.0)
    faulty.drop("latency", latency=0.1, duration=1.0)
    faulty.heal()
    assert proxy.calls == [("reset", None), ("blackhole", 2.0), ("latency", (0.1, 1.0)), ("heal", None)]
    assert launched.stream.active() is None and echo_works(launched.stream, inner.runners[0])


def test_every_member_of_the_port_is_delegated() -> None:
    """A method added to the Transport ABC later must be delegated too, not silently defaulted."""
    port = [name for name in dir(Transport) if not name.startswith("_")]
    assert [name for name in port if name not in vars(FaultyTransport)] == []
