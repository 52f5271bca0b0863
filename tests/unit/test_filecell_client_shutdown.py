"""A filecell poll that carries ``shutdown`` must bring the supervisor's ``bye`` back even when the
supervisor, ending, removed its kernel dir before the poll looked there for spooled or dropped
frames.

Found by a clean-clone CI run (the example backend's contract case "shutdown reports how the
kernel ended" saw ``step='unreachable'``); reproduced on the local shell backend: 2 of 40
start-then-shutdown rounds on an idle 2-core machine, 8-10 of 40 with three busy loops beside
them. The poll's client crashed on the missing dir (``FileNotFoundError`` from its spool scan)
with the ``bye`` unread on its connection; the next polls found no runner, the stream broke, and
the kernel was reported killed from outside.

Here the supervisor is the test's end of a socket pair and the kernel dir never exists: the
client must still relay the ``bye`` and end ``done``.
"""

from __future__ import annotations

import binascii
import io
import json
import socket
import threading
from typing import Any

import pytest

from pytest_hermes_kernel.kernel.runner import client
from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame
from pytest_hermes_kernel.transports.filecell.scripts import parse_client_output


def _supervisor(sock: socket.socket, seen: list[dict[str, Any]]) -> None:
    """Read the attach and the shutdown, answer as an ending supervisor does, and hang up."""
    decoder = FrameDecoder()
    with sock:
        while len(seen) < 2:
            chunk = sock.recv(65536)
            if not chunk:
                return
            decoder.feed(chunk)
            while (frame := decoder.next_frame()) is not None:
                seen.append(frame[0])
        sock.sendall(encode_frame({"type": "bye", "id": seen[1]["id"], "step": "request", "exit_code": 0}))


def test_a_shutdown_poll_relays_the_bye_when_the_kernel_dir_is_already_gone(tmp_path, monkeypatch) -> None:
    ours, theirs = socket.socketpair()
    seen: list[dict[str, Any]] = []
    supervisor = threading.Thread(target=_supervisor, args=(theirs, seen), daemon=True)
    supervisor.start()
    monkeypatch.setattr(client, "_connect", lambda kernel_dir: (ours, "token"))
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    frames = encode_frame({"type": "shutdown", "id": 7, "grace": 1.0})
    params = {"frames": binascii.b2a_base64(frames, newline=False).decode(), "deadline_s": 10.0, "pickup_s": 0.2}

    client.client(str(tmp_path / "removed-by-the-supervisor"),
                  binascii.b2a_base64(json.dumps(params).encode(), newline=False).decode())

    supervisor.join(10)
    assert [frame["type"] for frame in seen] == ["attach", "shutdown"]
    parsed = parse_client_output(out.getvalue())
    assert parsed.status == "done" and parsed.sent, out.getvalue()
    relayed = []
    for raw in parsed.frames:
        decoder = FrameDecoder()
        decoder.feed(raw)
        relayed.append(decoder.next_frame()[0])
    assert [(frame["type"], frame["id"]) for frame in relayed] == [("bye", 7)], out.getvalue()


@pytest.mark.parametrize("scan", ["_unspool", "_pickup"])
def test_the_clients_scans_of_a_missing_kernel_dir_find_nothing(tmp_path, scan) -> None:
    missing = str(tmp_path / "gone")
    if scan == "_unspool":
        assert client._unspool(missing, set()) is None
    else:
        left, right = socket.socketpair()
        with left, right:
            client._pickup(missing, left, set())  # sends nothing, raises nothing
            right.setblocking(False)
            with pytest.raises(BlockingIOError):
                right.recv(1)
