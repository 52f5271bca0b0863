"""The supervisor keeps the running cell's unanswered tool calls for a re-attach
(kernel/runner/cells.py, supervisor.py): a host that re-attaches after its stream broke asks
for them (``resend_tool_calls`` in its attach) and gets them again, in the order the worker made
them, until they are answered; an attach that does not ask (a filecell poll) gets none, and a
settled cell has none. Before, a call the worker made while no host was attached was lost and
the cell waited for its answer until its budget ended.

The host here is the test: it attaches to a kept local kernel's socket with raw frames.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle, attach_kept
from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, wait_until

#: A cell with two tool calls in flight at once (one from a thread); its value names both answers.
TWO_CALLS = """
import hermes_tools, threading
got = {}
caller = threading.Thread(target=lambda: got.update(first=hermes_tools.call('first')))
caller.start()
got['second'] = hermes_tools.call('second')
caller.join()
sorted(got.items())
"""
ANSWERS = {"first": "one", "second": "two"}
CELL = 1


class Host:
    """One attach to the runner's socket (a context manager: leaving it closes the socket); frames
    are read with a deadline (seconds)."""

    def __init__(self, path: str, token: str, *, pending: tuple[Any, ...] = (), resend_tool_calls: bool) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(10.0)
        self.sock.connect(path)
        self.decoder = FrameDecoder()
        self.send({"type": "attach", "token": token, "pending": list(pending), "resend_tool_calls": resend_tool_calls})

    def send(self, header: dict[str, Any]) -> None:
        self.sock.sendall(encode_frame(header))

    def next(self) -> dict[str, Any]:
        while (frame := self.decoder.next_frame()) is None:
            data = self.sock.recv(65536)
            assert data, "the runner closed the channel"
            self.decoder.feed(data)
        return frame[0]

    def until_pong(self) -> list[dict[str, Any]]:
        """Every frame up to the reply to a ping sent now (the attach's frames come before it)."""
        self.send({"type": "ping", "id": "probe"})
        frames = [self.next()]
        while frames[-1]["type"] != "pong":
            frames.append(self.next())
        return frames[:-1]

    def answer(self, call: dict[str, Any]) -> None:
        self.send({"type": "tool_result", "id": call["id"], "ok": True, "value": ANSWERS[call["name"]]})

    def __enter__(self) -> Host:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sock.close()


@pytest.fixture
def runner() -> Iterator[tuple[str, str]]:
    """A kept local kernel: its socket path and token (no host attached); ended after the test."""
    transport = LocalTransport()
    handle = KernelHandle(transport).start()
    locator, kernel_id, token, pid = transport.locator(handle.launched), handle.kernel_id, handle.token, handle.pid
    assert handle.keep(30.0).step == "kept"
    yield locator["listen"], token
    attach_kept(transport, locator, kernel_id=kernel_id, token=token).shutdown()
    wait_until(lambda: gone(pid), 10.0, what="the kept kernel to end")
    transport.close()


def _calls(frames: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(f["type"], f.get("id")) for f in frames if f["type"] != "hello"]


def test_a_reattaching_host_gets_the_unanswered_tool_calls_again_until_each_is_answered(runner):
    path, token = runner
    with Host(path, token, resend_tool_calls=False) as first:
        assert first.next()["type"] == "hello"
        first.send({"type": "execute", "id": CELL, "code": TWO_CALLS, "tools": sorted(ANSWERS)})
        made = [first.next(), first.next()]  # the worker's two calls, in the order it made them
        assert {c["type"] for c in made} == {"tool_call"}
    # the stream broke: neither call is answered

    with Host(path, token, pending=(CELL,), resend_tool_calls=False) as poll:
        assert _calls(poll.until_pong()) == [], "an attach that did not ask got tool calls"

    with Host(path, token, pending=(CELL,), resend_tool_calls=True) as again:
        assert _calls(again.until_pong()) == [("tool_call", c["id"]) for c in made]
        again.answer(made[1])
        assert _calls(again.until_pong()) == []  # the runner has the answer before this host leaves

    with Host(path, token, pending=(CELL,), resend_tool_calls=True) as last:
        assert _calls(last.until_pong()) == [("tool_call", made[0]["id"])], "an answered call was sent again"
        last.answer(made[0])
        result = last.next()
    assert result["type"] == "result" and result["value"] == "[('first', 'one'), ('second', 'two')]", result

    with Host(path, token, pending=(CELL,), resend_tool_calls=True) as settled:
        assert _calls(settled.until_pong()) == [("result", CELL)], "a settled cell's calls are gone, its result replayed"
