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
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame
from pytest_hermes_kernel.kernel.runner import worker as worker_module
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
        signal.signal(signal.SIGINT, before)
        host.close()
        mine.close()


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

    with pytest.raises(KeyboardInterrupt):
        w.call_tool("busy", {})
    server.join(5)
    w.in_cell = False

    assert w.recv() == {"type": "execute", "id": 2, "code": "kept"}, "the next cell's request was kept"
    assert not w.reading, "the reading was handed over"


def test_an_interrupt_while_waiting_for_a_slow_tool_still_interrupts_at_once(worker):
    w, host = worker
    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()  # the tool never answers
    started = time.monotonic()

    with pytest.raises(KeyboardInterrupt):
        w.call_tool("slow", {})

    assert time.monotonic() - started < 2.0, "the wait for the reply was cut by the interrupt"


def _results(host: socket.socket) -> list[dict]:
    """The result frames the worker sent (its socket end is closed by then)."""
    host.settimeout(5)
    decoder, out = FrameDecoder(), []
    while data := host.recv(65536):
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


def test_an_interrupt_with_the_next_cells_request_unread_interrupts_that_cell(worker):
    """The supervisor forwards a cell and signals its interrupt right behind it: the SIGINT can
    land before the worker has read the request. It is that cell's (seen on the filecell
    transport under load: the interrupt was dropped and the cell slept its 30 s)."""
    w, host = worker
    w.in_cell = False
    host.sendall(encode_frame({"type": "execute", "id": 1, "code": "ran = 1"}))
    os.kill(os.getpid(), signal.SIGINT)

    first, second = _serve(w, host, "ran2 = 2", first_id=2)

    assert (first["status"], first["ename"]) == ("interrupted", "KeyboardInterrupt") and "ran" not in w.namespace
    assert second["status"] == "ok" and w.namespace["ran2"] == 2, "only the one cell was interrupted"


def test_an_interrupt_after_the_request_was_taken_but_before_the_cell_began_interrupts_it(worker):
    """Nothing else waits in the socket then (the next request is sent only after this result)."""
    w, host = worker
    w.in_cell = False
    run_cell = w.run_cell

    def signal_then_run(msg):  # the SIGINT lands between the loop's read and the cell's start
        if msg["id"] == 1:
            os.kill(os.getpid(), signal.SIGINT)
        run_cell(msg)

    w.run_cell = signal_then_run
    results = []

    def host_side() -> None:  # one cell at a time, as the supervisor does
        decoder = FrameDecoder()
        for frame in ({"type": "execute", "id": 1, "code": "ran = 1"}, {"type": "execute", "id": 2, "code": "ran2 = 2"}):
            host.sendall(encode_frame(frame))
            while not (got := decoder.next_frame()) or got[0].get("type") != "result":
                if got is None:
                    decoder.feed(host.recv(65536))
            results.append(got[0])
        host.sendall(encode_frame({"type": "exit"}))

    thread = threading.Thread(target=host_side, daemon=True)
    thread.start()
    w.loop()
    thread.join(5)

    first, second = results
    assert first["status"] == "interrupted" and "ran" not in w.namespace
    assert second["status"] == "ok" and w.namespace["ran2"] == 2


def test_an_interrupt_landing_as_the_requests_bytes_are_read_interrupts_that_cell(worker):
    """The SIGINT lands right after the worker's read returned the request's bytes and before they
    are decoded: nothing waits in the socket nor in the decoder then, yet the interrupt is that
    cell's (seen as the flaky contract case ``test_an_interrupt_of_a_cell_sent_again_after_the_
    reattach_reaches_it[docker]``: the host sends the cell and its interrupt back to back after a
    re-attach, the interrupt was dropped and the cell slept its 60 s)."""
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
    assert (first["status"], first["ename"]) == ("interrupted", "KeyboardInterrupt") and "ran" not in w.namespace
    assert second["status"] == "ok" and w.namespace["ran2"] == 2, "only the one cell was interrupted"


def test_a_late_interrupt_while_the_worker_waits_for_its_next_request_is_ignored(worker, monkeypatch):
    """The SIGINT of a cell that has just ended lands while the worker waits, nothing read, for
    the next request: the request that comes later runs (it is no cell's interrupt then)."""
    w, host = worker
    w.in_cell = False
    real_select, landed = worker_module.select.select, []

    def interrupt_then_send(rlist, wlist, xlist, *timeout):
        if timeout and not landed:  # the main loop's wait for its next request's bytes
            landed.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # the handler runs here, the socket empty
            host.sendall(encode_frame({"type": "execute", "id": 1, "code": "ran = 1"}) + encode_frame({"type": "exit"}))
        return real_select(rlist, wlist, xlist, *timeout)

    monkeypatch.setattr(worker_module, "select", SimpleNamespace(select=interrupt_then_send))
    w.loop()
    w.sock.close()

    (r,) = _results(host)
    assert landed, "the wait for the next request was not reached"
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


def test_an_interrupt_with_an_abandoned_tool_reply_and_the_request_unread_interrupts_that_cell(worker):
    """Both wait in the socket when the SIGINT lands: the request among them makes it that cell's."""
    w, host = worker
    w.in_cell = False
    host.sendall(encode_frame({"type": "tool_result", "id": "gone-1", "ok": True, "value": 1})
                 + encode_frame({"type": "execute", "id": 1, "code": "ran = 1"}))
    os.kill(os.getpid(), signal.SIGINT)

    first, second = _serve(w, host, "ran2 = 2", first_id=2)

    assert first["status"] == "interrupted" and "ran" not in w.namespace
    assert second["status"] == "ok" and w.namespace["ran2"] == 2, "only the one cell was interrupted"
