"""An interrupt sent right after a tool's result, in the shapes the first fix did not cover (found
by adversarial testing of 72f02fa): the call returns its result, and ``KeyboardInterrupt`` comes
at the cell's next step. These tests run a :class:`Worker` in this process, on a socketpair, with
its SIGINT handler installed (as ``test_worker_interrupt.py``).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time

import pytest

from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame
from pytest_hermes_kernel.kernel.runner.tools import make_tools_module
from tests.unit.test_worker_interrupt import (  # noqa: F401 - worker: the fixture
    _after_call_threads, _answer_each_tool_call_then_interrupt, _serve, _sigint_once, _until, worker)


class _Host:
    """The supervisor's end: reads the worker's tool calls; answers the ones named in ``then_interrupt``
    and SIGINTs the worker right after writing the answer; holds the others until :meth:`release`."""

    def __init__(self, host: socket.socket, then_interrupt: set[str]) -> None:
        self.host, self.then_interrupt = host, then_interrupt
        self.held: list[dict] = []
        self.called: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        decoder = FrameDecoder()
        while True:
            try:
                data = self.host.recv(65536)
            except OSError:
                return
            if not data:
                return
            decoder.feed(data)
            while (frame := decoder.next_frame()) is not None:
                call = frame[0]
                if call.get("type") != "tool_call":
                    continue
                self.called.append(call["name"])
                if call["name"] in self.then_interrupt:
                    self.host.sendall(encode_frame({"type": "tool_result", "id": call["id"], "ok": True, "value": 7}))
                    os.kill(os.getpid(), signal.SIGINT)
                else:
                    self.held.append(call)

    def release(self) -> None:
        for call in self.held:
            self.host.sendall(encode_frame({"type": "tool_result", "id": call["id"], "ok": True, "value": 0}))


class _StallingSocket:
    """The worker's socket, whose ``recv`` in a thread other than the main one holds the bytes it
    read for ``stall`` seconds before handing them on (a thread waiting for the GIL)."""

    def __init__(self, sock: socket.socket, stall: float) -> None:
        self.sock, self.stall, self.main = sock, stall, threading.get_ident()

    def recv(self, n: int) -> bytes:
        data = self.sock.recv(n)
        if data and threading.get_ident() != self.main:
            time.sleep(self.stall)
        return data

    def __getattr__(self, name: str):
        return getattr(self.sock, name)


def test_a_result_another_thread_of_the_cell_read_is_returned_before_the_interrupt(worker):
    """A thread of the cell waits for a tool of its own, so it reads the worker's socket for everyone;
    the main thread's result comes, then the interrupt. The reader has the result's bytes but has not
    routed them yet when the main thread looks (it waits for the GIL: modelled by a stall): the main
    thread gave up on its call, and the cell lost the result, as every cell did before 72f02fa."""
    w, host = worker
    w.sock = _StallingSocket(w.sock, 0.2)
    server = _Host(host, {"value"})
    bg = threading.Thread(target=_quietly, args=(w.call_tool, "slow", {}), daemon=True)
    bg.start()
    got = []
    try:
        assert _until(lambda: w.reading and server.called == ["slow"]), "the cell's thread is not the reader"

        with pytest.raises(KeyboardInterrupt):
            got.append(w.call_tool("value", {}))
            _until(lambda: False)  # the interrupt comes here, at the cell's next step
    finally:
        server.release()
        bg.join(5)

    assert got == [7], "the call's result was lost to the interrupt that followed it"


def _quietly(call, *args) -> None:
    try:
        call(*args)
    except Exception:  # noqa: BLE001 - the test's end may close the socket first
        pass


def test_an_interrupt_while_another_thread_reads_and_no_result_came_still_interrupts_at_once(worker):
    w, host = worker
    server = _Host(host, set())  # no tool answers
    bg = threading.Thread(target=_quietly, args=(w.call_tool, "slow", {}), daemon=True)
    bg.start()
    try:
        assert _until(lambda: w.reading and server.called == ["slow"]), "the cell's thread is not the reader"
        started = time.monotonic()
        _sigint_once(lambda: "never" in server.called)  # (a 0.1-s timer could come before pytest.raises)

        with pytest.raises(KeyboardInterrupt):
            w.call_tool("never", {})

        # not cut, the wait never ends (no tool answers): 10 s is a loaded machine's slack (it was 2 s)
        assert time.monotonic() - started < 10.0, "the wait for the reply was not cut by the interrupt"
    finally:
        server.release()
        bg.join(5)


@pytest.fixture
def cell_calls(worker, monkeypatch):
    """Each tool call of the worker's cells is answered, and the cell interrupted right after."""
    w, host = worker
    w.in_cell = False
    monkeypatch.setitem(sys.modules, "hermes_tools", make_tools_module(w))
    _answer_each_tool_call_then_interrupt(w, host)
    return w, host


#: A cell's ``for`` loop that waits up to ``{s}`` seconds, one step a millisecond, ``until`` a condition.
WAIT = "end = time.monotonic() + {s}\nwhile time.monotonic() < end and not ({until}):\n    time.sleep(0.001)\n"


def test_a_cell_that_sets_its_own_sigint_handler_after_the_call_gets_the_interrupt_once(cell_calls):
    """A cell that installs a SIGINT handler of its own right after a tool call (the interrupt that
    followed the result not raised yet) had that handler run every millisecond, through the rest of
    the cell and between cells, by the worker's thread that carries the interrupt past the call
    (it ran until the next cell began): ~900 calls a second while the kernel sat idle."""
    w, host = cell_calls
    cell = ("import hermes_tools, signal, time\nhits = []\ngot = hermes_tools.busy()\n"
            "signal.signal(signal.SIGINT, lambda *a: hits.append(1))\n" + WAIT.format(s=0.1, until="False")
            + "in_cell = len(hits)")

    (r,) = _serve(w, host, cell)

    assert r["status"] == "ok" and w.namespace["got"] == 1, r
    assert _until(lambda: not _after_call_threads(), 2.0), "the worker's thread still signals after its cell ended"
    assert w.namespace["in_cell"] == len(w.namespace["hits"]) == 1, "the cell's handler got SIGINTs nobody sent"


def test_a_cell_that_restores_the_default_sigint_handler_after_the_call_leaves_the_worker_running(cell_calls):
    """``signal.default_int_handler`` set back right after a tool call (the interrupt that followed
    the result not raised yet): the cell caught its one ``KeyboardInterrupt``, but the worker's
    thread went on signalling, and the next SIGINT raised ``KeyboardInterrupt`` in the worker's own
    loop between cells: the worker died, the kernel's state was lost."""
    w, host = cell_calls
    cell = ("import hermes_tools, signal, time\ncaught = 0\ngot = hermes_tools.busy()\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\ntry:\n    "
            + WAIT.format(s=1.0, until="False").replace("\n", "\n    ").rstrip() + "\nexcept KeyboardInterrupt:\n    caught += 1\n"
            + WAIT.format(s=0.05, until="False"))

    try:
        results = _serve(w, host, cell, "ran = 1")
    except KeyboardInterrupt:
        pytest.fail("a SIGINT the host never sent raised KeyboardInterrupt in the worker's loop: the worker dies")

    assert [r["status"] for r in results] == ["ok", "ok"], results
    assert w.namespace["caught"] == 1 and w.namespace["ran"] == 1


def test_a_cell_that_blocks_sigint_after_the_call_leaves_no_interrupt_for_a_later_cell(cell_calls):
    """The worker's thread sent SIGINT to a main thread that had blocked it: the signal waited,
    pending, past the cell's end, and interrupted the later cell that unblocked SIGINT (an interrupt
    nobody sent to that cell)."""
    w, host = cell_calls
    first = ("import hermes_tools, signal, time\ngot = hermes_tools.busy()\n"
             "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n" + WAIT.format(s=0.05, until="False"))
    later = ("signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})\n" + WAIT.format(s=0.1, until="False")
             + "ran = 1")

    results = _serve(w, host, first, later)

    assert [r["status"] for r in results] == ["ok", "ok"], results
    assert w.namespace["ran"] == 1


def test_an_interrupt_landing_as_the_call_returns_its_result_comes_at_the_next_step(worker):
    """The SIGINT sent right after the result can land once the call's shield has ended, while the
    call still returns (the supervisor was slow to send it: 2 of 6000 cells on the local transport
    with the interrupt 0-1 ms after the result frame): it raised ``KeyboardInterrupt`` inside the
    call, and the cell lost the result, as before 72f02fa."""
    w, host = worker
    leave = w._leave_call

    def leave_then_interrupt(answered):
        leave(answered)
        signal.raise_signal(signal.SIGINT)  # the handler runs here, on the call's way back

    w._leave_call = leave_then_interrupt
    server = _Host(host, set())
    threading.Thread(target=lambda: _until(lambda: server.held) and server.release(), daemon=True).start()
    got = []

    with pytest.raises(KeyboardInterrupt):
        got.append(w.call_tool("value", {}))
        _until(lambda: False)  # the interrupt comes here, at the cell's next step

    assert got == [0], "the call's result was lost to the interrupt that followed it"


def test_the_next_cell_finds_no_thread_of_the_worker_running(cell_calls):
    """The thread that carried the interrupt past the call ends at its next tick once its cell has
    ended: the next cell began before that and found it running (27 of 30 cells right after such an
    interrupt, local transport), so a cell that checks its threads (``threading.active_count()``)
    saw one it never started."""
    w, host = cell_calls
    first = "import hermes_tools, threading, time\ngot = hermes_tools.busy()\n" + WAIT.format(s=1.0, until="False")

    results = _serve(w, host, first, "names = [t.name for t in threading.enumerate()]")

    assert [r["status"] for r in results] == ["interrupted", "ok"], results
    assert "hermes-interrupt-after-call" not in w.namespace["names"]
