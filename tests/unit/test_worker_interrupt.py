"""A SIGINT that lands while the worker's main thread reads or writes frames (a cell waiting for
a tool's result) interrupts the cell once that step is done, never in the middle of it.

Found by ``tests/regressions/test_interrupt_racing_a_channel_read_keeps_the_kernel.py`` on docker
in a full matrix run: the interrupt came while the worker handled the tool's reply, the
``KeyboardInterrupt`` skipped part of the reader's bookkeeping, and the next cell's ``execute``
was never read (the cell timed out and the kernel was killed: its state lost). These tests run a
:class:`Worker` in this process, on a socketpair, with its SIGINT handler installed.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame
from pytest_hermes_kernel.kernel.runner.tools import make_tools_module
from pytest_hermes_kernel.kernel.runner.worker import Worker


@pytest.fixture
def worker() -> Iterator[tuple[Worker, socket.socket]]:
    """A worker inside a cell, its SIGINT handler installed, and the supervisor's end."""
    host, mine = socket.socketpair()
    mine.settimeout(5)  # a lost frame ends the read (EOFError) instead of hanging the test
    w = Worker(mine, {})
    w.in_cell, w.cell_id = True, 1
    before = signal.signal(signal.SIGINT, w.on_sigint)
    try:
        yield w, host
    finally:
        w.in_cell = False
        with w._rearm:  # a thread still re-sending an interrupt stops (it would hit pytest)
            w._after_call, w.execution_count = False, w.execution_count + 1
        _until(lambda: not _after_call_threads())
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # (a cell's mask; a pending one is ignored)
        signal.signal(signal.SIGINT, before)
        host.close()
        mine.close()


def _after_call_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "hermes-interrupt-after-call"]


def _until(pred, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.002)
    return True


def _serve_one_tool_call(host: socket.socket, then: bytes = b"") -> threading.Thread:
    """Answer the worker's next tool call ``ok``, sending ``then`` in the same write."""
    def serve() -> None:
        decoder = FrameDecoder()
        while (frame := decoder.next_frame()) is None:
            decoder.feed(host.recv(65536))
        call = frame[0]
        host.sendall(encode_frame({"type": "tool_result", "id": call["id"], "ok": True, "value": 1}) + then)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


def test_an_interrupt_while_the_tool_reply_is_handled_leaves_the_next_command_readable(worker):
    w, host = worker
    route = w._route

    def route_then_interrupt(msg):  # the SIGINT lands right as the reply is handled
        if msg.get("type") == "tool_result":
            os.kill(os.getpid(), signal.SIGINT)
        route(msg)

    w._route = route_then_interrupt
    server = _serve_one_tool_call(host, then=encode_frame({"type": "execute", "id": 2, "code": "kept"}))
    got = []

    with pytest.raises(KeyboardInterrupt):
        got.append(w.call_tool("busy", {}))  # the reply came first: the call returns it
        time.sleep(5)  # (not reached: the interrupt follows at the caller's next step)
    server.join(5)
    assert got == [1]
    w.in_cell = False

    assert w.recv() == {"type": "execute", "id": 2, "code": "kept"}, "the next cell's request was kept"
    assert not w.reading, "the reading was handed over"


def _sigint_once(pred) -> threading.Thread:
    """SIGINT this process once ``pred()`` holds (a condition, not a timer: a timer's SIGINT that
    came before the test's ``pytest.raises`` was entered, the main thread held up that long, was
    a ``KeyboardInterrupt`` in the test itself, which ends pytest's whole run)."""
    def fire() -> None:
        if _until(pred, 10.0):
            os.kill(os.getpid(), signal.SIGINT)

    thread = threading.Thread(target=fire, daemon=True)
    thread.start()
    return thread


def _tool_call_sent(host: socket.socket):
    """A condition: the worker's tool call has reached ``host`` (read here; it is never answered)."""
    decoder, seen = FrameDecoder(), []
    host.setblocking(False)

    def sent() -> bool:
        try:
            decoder.feed(host.recv(65536))
        except BlockingIOError:
            pass
        while (frame := decoder.next_frame()) is not None:
            seen.append(frame[0].get("type"))
        return "tool_call" in seen
    return sent


def test_an_interrupt_while_waiting_for_a_slow_tool_still_interrupts_at_once(worker):
    w, host = worker
    started = time.monotonic()
    _sigint_once(_tool_call_sent(host))  # the tool never answers

    with pytest.raises(KeyboardInterrupt):
        w.call_tool("slow", {})

    # not cut, the wait never ends (the tool never answers); the poll looks every INTERRUPT_POLL_S (0.02 s):
    # 10 s is a loaded machine's slack (it was 2 s)
    assert time.monotonic() - started < 10.0, "the wait for the reply was cut by the interrupt"
    host.setblocking(True)


def _results(host: socket.socket) -> list[dict]:
    """The result frames the worker sent (its socket end is closed by then)."""
    host.settimeout(5)
    decoder, out = FrameDecoder(), []
    while True:
        try:
            data = host.recv(65536)
        except ConnectionResetError:  # the worker left frames unread (a tool's result it gave up on)
            break
        if not data:
            break
        decoder.feed(data)
        while (frame := decoder.next_frame()) is not None:
            out.append(frame[0])
    return [f for f in out if f.get("type") == "result"]


def _serve(w: Worker, host: socket.socket, *cells: str, first_id: int = 1) -> list[dict]:
    """Send ``cells`` (ids from ``first_id``) then ``exit``, and run the worker's main loop until
    it exits; the results it sent (of these cells and of any sent before)."""
    for i, code in enumerate(cells, first_id):
        host.sendall(encode_frame({"type": "execute", "id": i, "code": code}))
    host.sendall(encode_frame({"type": "exit"}))
    w.loop()
    w.sock.close()
    return _results(host)


def test_a_late_interrupt_between_cells_with_nothing_waiting_is_ignored(worker):
    w, host = worker
    w.in_cell = False
    os.kill(os.getpid(), signal.SIGINT)  # e.g. the ladder's SIGINT landing after its cell ended

    (r,) = _serve(w, host, "ran = 1")

    assert r["status"] == "ok" and w.namespace["ran"] == 1



def test_a_late_interrupt_with_only_an_abandoned_tool_reply_unread_is_ignored(worker):
    """A cell interrupted while it waited for a tool ends without reading the tool's reply, which
    comes later and waits in the socket; a second SIGINT of that cell (a second ``interrupt()``,
    the ladder's) landing then is a late one. Unread bytes are no ``execute``: the next cell runs."""
    w, host = worker
    w.in_cell = False
    route = w._route

    def route_then_send_the_next_cell(msg):  # the next request comes after the reply was read
        route(msg)
        if msg.get("type") == "tool_result":
            host.sendall(encode_frame({"type": "execute", "id": 1, "code": "ran = 1"}) + encode_frame({"type": "exit"}))

    w._route = route_then_send_the_next_cell
    host.sendall(encode_frame({"type": "tool_result", "id": "gone-1", "ok": True, "value": 1}))
    os.kill(os.getpid(), signal.SIGINT)

    w.loop()
    w.sock.close()

    (r,) = _results(host)
    assert r["status"] == "ok" and w.namespace["ran"] == 1, r


def test_a_late_interrupt_between_cells_with_the_next_request_unread_is_ignored(worker):
    """The SIGINT of a cell that has ended can be handled late (a thread of that cell held the
    GIL) with the next request already waiting: the supervisor signals a cell only once the
    worker said it runs, so a SIGINT between cells is never the next cell's, and it runs."""
    w, host = worker
    w.in_cell = False
    host.sendall(encode_frame({"type": "execute", "id": 1, "code": "ran = 1"}))
    os.kill(os.getpid(), signal.SIGINT)

    (r,) = _serve(w, host, first_id=2)

    assert r["status"] == "ok" and w.namespace["ran"] == 1


def test_a_late_interrupt_landing_as_the_next_requests_bytes_are_read_is_ignored(worker):
    w, host = worker
    w.in_cell = False
    recv, signalled = w._recv, []

    def recv_then_interrupt(main):
        data = recv(main)
        if data and not signalled:
            signalled.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs before the bytes are fed
        return data

    w._recv = recv_then_interrupt

    first, second = _serve(w, host, "ran = 1", "ran2 = 2")

    assert signalled, "the read was not reached"
    assert first["status"] == second["status"] == "ok" and w.namespace["ran"] == 1


def test_the_worker_says_running_from_inside_each_cell_before_its_result(worker):
    """The supervisor holds a cell's interrupt until this frame: a SIGINT while it is sent is
    the cell's (it interrupts the cell once the frame is out)."""
    w, host = worker
    w.in_cell = False
    send, sent_in_cell = w.send, []

    def send_and_note(header):
        if header.get("type") == "running":
            sent_in_cell.append(w.in_cell)
            os.kill(os.getpid(), signal.SIGINT)
        send(header)

    w.send = send_and_note
    for i, code in enumerate(("ran = 1", "ran2 = 2"), 1):
        host.sendall(encode_frame({"type": "execute", "id": i, "code": code}))
    host.sendall(encode_frame({"type": "exit"}))
    w.loop()
    w.sock.close()

    assert sent_in_cell == [True, True]
    first, second = _results(host)
    assert first["status"] == second["status"] == "interrupted" and "ran" not in w.namespace



def _answer_each_tool_call_then_interrupt(w: Worker, host: socket.socket) -> list[str]:
    """As the supervisor does when the host answers a tool call and then interrupts the cell:
    the tool's result is written to the worker's socket, then SIGINT is sent. The SIGINT lands
    before the worker has read anything (it is still sending its call). The names called, in order."""
    send, called = w.send, []

    def send_then_answer(header):
        send(header)
        if header.get("type") == "tool_call":
            called.append(header["name"])
            host.sendall(encode_frame({"type": "tool_result", "id": header["id"], "ok": True, "value": len(called)}))
            os.kill(os.getpid(), signal.SIGINT)

    w.send = send_then_answer
    return called


@pytest.fixture
def tools_module(worker, monkeypatch):
    monkeypatch.setitem(sys.modules, "hermes_tools", make_tools_module(worker[0]))


def test_an_interrupt_sent_after_a_tools_result_lets_the_call_return_it_first(worker, tools_module):
    """The order the host sent them in: the cell gets the result and goes on to its next step,
    where the interrupt ends it (the flaky ``test_filecell.py`` case over ssh: ``done == 0``)."""
    w, host = worker
    w.in_cell = False
    called = _answer_each_tool_call_then_interrupt(w, host)

    (r,) = _serve(w, host, "import hermes_tools, time\ngot = hermes_tools.busy()\nafter = got + 1\n"
                           "while True:\n    time.sleep(0.01)")

    assert called == ["busy"]
    assert r["status"] == "interrupted" and r["ename"] == "KeyboardInterrupt", r
    assert (w.namespace.get("got"), w.namespace.get("after")) == (1, 2), "the call's result was lost to the interrupt"


def test_an_interrupt_after_a_tools_result_ends_the_cell_before_its_next_tool_call_goes_out(worker, tools_module):
    w, host = worker
    w.in_cell = False
    called = _answer_each_tool_call_then_interrupt(w, host)

    (r,) = _serve(w, host, "import hermes_tools\ngot = hermes_tools.first()\nhermes_tools.second()")

    assert r["status"] == "interrupted" and w.namespace["got"] == 1
    assert called == ["first"], "a call went out after the interrupt that should have ended the cell"


def test_an_interrupt_after_a_tools_result_is_raised_once(worker, tools_module):
    """The worker re-arms SIGINT to raise it in the cell's own code; a cell that catches the
    ``KeyboardInterrupt`` goes on undisturbed (whether it came at the next step or at the next call)."""
    w, host = worker
    w.in_cell = False
    _answer_each_tool_call_then_interrupt(w, host)
    cell = ("import hermes_tools, time\ncaught = 0\ntry:\n    hermes_tools.first()\n    {next}\n"
            "except KeyboardInterrupt:\n    caught += 1\nfor _ in range(20):\n    time.sleep(0.005)\ndone = 1")

    results = _serve(w, host, cell.format(next="time.sleep(5)"), cell.format(next="hermes_tools.second()"))

    assert [r["status"] for r in results] == ["ok", "ok"], results
    assert w.namespace["caught"] == 1 and w.namespace["done"] == 1
