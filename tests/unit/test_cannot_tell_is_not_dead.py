"""The core counts a runner dead only when its transport saw it gone (``Transport.seen_gone``),
never because ``alive()`` said ``False``: by the port's contract that may mean "cannot tell" (an
ssh host gone silent refuses the probe at once). Over an in-process fake runner that stops
answering mid-cell, on a transport that cannot see it: the timed-out cell is ``abandoned``, not
reset; no second runner starts beside it; a shutdown is not ``confirmed``. On a transport that saw
it gone (the default ``seen_gone``, ``not alive()``), the same cell is reset. A runner that never
says hello on such a transport may still run after its failed start: the start error says so, no
second runner starts beside it, and a shutdown is not ``confirmed``.

The real silent host is ``tests/regressions/test_silent_ssh_host_is_not_read_as_dead.py``.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest

from pytest_hermes_kernel.errors import KernelStartError
from pytest_hermes_kernel.kernel.channel import SocketStream
from pytest_hermes_kernel.kernel.contract import Launched, LaunchSpec, Transport
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.kernel.options import KernelOptions, WatchdogPolicy
from pytest_hermes_kernel.kernel.results import FrameDecoder, encode_frame

#: The ladder in tenths of a second: budget, SIGINT grace, kill grace.
FAST = KernelOptions(watchdog=WatchdogPolicy(interrupt_grace=0.1, kill_grace=0.1), shutdown_grace=0.1)
BUDGET_S = 0.2


class SilentRunner(threading.Thread):
    """Says hello, answers a first cell, then takes cells and says nothing (its host went silent);
    a shutdown request it answers."""

    def __init__(self, sock: socket.socket, pid: int) -> None:
        super().__init__(daemon=True, name=f"silent-runner-{pid}")
        self.sock, self.pid, self.cells = sock, pid, 0

    def run(self) -> None:
        self.sock.sendall(encode_frame({"type": "hello", "worker_pid": self.pid, "replayed": [], "running": None}))
        decoder = FrameDecoder()
        try:
            while data := self.sock.recv(1 << 16):
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    self._answer(frame[0])
        except OSError:
            pass  # the host closed its end
        finally:
            self.sock.close()

    def _answer(self, msg: dict[str, Any]) -> None:
        if msg.get("type") == "execute":
            self.cells += 1
            if self.cells == 1:
                self.sock.sendall(encode_frame({"type": "result", "id": msg["id"], "status": "ok",
                                                "execution_count": 1, "worker_pid": self.pid}, (b"", b"", b"", b"")))
        elif msg.get("type") == "shutdown":
            self.sock.sendall(encode_frame({"type": "bye", "id": msg["id"], "step": "request", "exit_code": 0}))


class Unseeable(Transport):
    """``alive()`` is ``False`` (it cannot tell, as ssh says on a silent host) and kills are never
    confirmed; ``sees`` says whether the transport saw the runner gone."""

    name = "unseeable"
    runner_class = SilentRunner

    def __init__(self, *, sees: bool) -> None:
        self.sees = sees
        self.launches = 0
        self.runners: list[SilentRunner] = []

    def launch(self, spec: LaunchSpec) -> Launched:
        self.launches += 1
        host_end, runner_end = socket.socketpair()
        runner = self.runner_class(runner_end, pid=1000 + self.launches)
        runner.start()
        self.runners.append(runner)
        return Launched(stream=SocketStream(host_end), pid=runner.pid, label=f"{self.name} {runner.pid}")

    def kill(self, launched: Launched) -> bool:
        return False

    def alive(self, launched: Launched) -> bool:
        return False

    def seen_gone(self, launched: Launched) -> bool:
        return self.sees


class Seen(Unseeable):
    """The same, but with the port's default ``seen_gone`` (``not alive()``): ``False`` is gone."""

    seen_gone = Transport.seen_gone


@pytest.fixture
def kernel_on() -> Any:
    made: list[KernelHandle] = []

    def start(transport: Unseeable) -> KernelHandle:
        handle = KernelHandle(transport, FAST).start()
        made.append(handle)
        assert handle.execute("1").status == "ok"
        return handle

    yield start
    for handle in made:
        handle.shutdown()  # closes the host's end of every runner's socket: the runner threads end
        for runner in handle.transport.runners:
            runner.join(5.0)


def test_a_timed_out_cell_on_a_runner_not_seen_gone_is_abandoned(kernel_on):
    transport = Unseeable(sees=False)
    k = kernel_on(transport)

    r = k.execute("1", timeout=BUDGET_S)

    assert (r.status, r.watchdog) == ("timeout", "abandoned"), r.summary()
    assert "could not be reached" in r.kernel.note and "killed" not in r.kernel.note, r.kernel.note
    with pytest.raises(KernelStartError, match="was not seen gone and could not be ended"):
        k.execute("2")
    assert transport.launches == 1  # no second runner beside the one that may still run
    info = k.shutdown()  # its channel was closed by the refused start: killed from outside, not confirmed
    assert (info.step, info.confirmed) == ("unreachable", False) and "may still run" in info.note, info


def test_a_timed_out_cell_on_a_runner_seen_gone_is_reset(kernel_on):
    transport = Seen(sees=True)
    k = kernel_on(transport)

    r = k.execute("1", timeout=BUDGET_S)

    assert (r.status, r.watchdog) == ("timeout", "reset"), r.summary()
    assert transport.launches == 2
    assert k.shutdown().confirmed


def test_a_shutdown_of_a_runner_that_said_goodbye_but_was_not_seen_gone_is_not_confirmed(kernel_on):
    """The runner answered the shutdown request, but the transport never saw it end."""
    k = kernel_on(Unseeable(sees=False))

    info = k.shutdown()

    assert info.step == "request" and not info.confirmed, info



class MuteRunner(SilentRunner):
    """Never says hello (its host went silent during the start); keeps its end open until closed."""

    def run(self) -> None:
        try:
            while self.sock.recv(1 << 16):
                pass
        except OSError:
            pass
        finally:
            self.sock.close()


class MuteHost(Unseeable):
    """Its runners never say hello; it cannot see them, never confirms a kill, counts cleanups."""

    name = "mute"
    runner_class = MuteRunner

    def __init__(self, *, sees: bool) -> None:
        super().__init__(sees=sees)
        self.cleanups = 0

    def cleanup(self, launched: Launched) -> None:
        self.cleanups += 1


@pytest.fixture
def mute_kernel() -> Any:
    """``mute_kernel(sees) -> (handle, transport)``: a kernel not started yet on a :class:`MuteHost`."""
    made: list[KernelHandle] = []

    def make(*, sees: bool) -> tuple[KernelHandle, MuteHost]:
        made.append(KernelHandle(MuteHost(sees=sees), KernelOptions(start_timeout=0.2, shutdown_grace=0.1)))
        return made[-1], made[-1].transport

    yield make
    for handle in made:
        handle.shutdown()
        for runner in handle.transport.runners:
            runner.join(5.0)


def test_a_failed_start_whose_runner_was_not_seen_gone_is_never_reported_ended(mute_kernel):
    k, transport = mute_kernel(sees=False)
    with pytest.raises(KernelStartError, match="did not say hello") as failed:
        k.start()
    assert "was not seen gone and its kill was not confirmed" in str(failed.value)
    assert transport.cleanups == 0, "its kernel dir is left to the runner that may still run"

    with pytest.raises(KernelStartError, match="was not seen gone and could not be ended"):
        k.start()
    assert transport.launches == 1, "no second runner beside the one that may still run"

    info = k.shutdown()
    assert (info.step, info.confirmed) == ("unreachable", False) and "may still run" in info.note, info


def test_a_failed_start_whose_runner_was_seen_gone_is_cleaned_and_the_next_start_is_a_new_runner(mute_kernel):
    k, transport = mute_kernel(sees=True)
    with pytest.raises(KernelStartError, match="did not say hello") as failed:
        k.start()
    assert "may still run" not in str(failed.value) and transport.cleanups == 1

    with pytest.raises(KernelStartError, match="did not say hello"):
        k.start()
    assert transport.launches == 2
    assert k.shutdown().step == "already-exited"
