"""Unit: a filecell poll (the runner file's client, run as the transport runs it) against a stand-in
supervisor: what it loads, and that its cheaper waits still deliver every frame.

Every filecell cell is one poll, so each module it loads is paid per cell: a shared library of the
stdlib (``select``, ``fcntl``, ``_struct``) ~0.2 ms, a codec module for a text file ~0.2 ms. The poll
waits with a socket timeout now, not ``select``; a frame dropped while it waits may be megabytes, and
it must still go out whole however slowly the supervisor reads.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame
from pytest_hermes_kernel.transports.filecell import scripts
from pytest_hermes_kernel.transports.runner_zipapp import runner_zipapp, write_runner

TOKEN = "0123456789abcdef"
#: What a poll never needs: ``select``/``fcntl``/``_struct`` (a holder or an unspool imports fcntl
#: itself), ``struct``, the codec of an ``encoding="ascii"`` text file, and ``__future__`` (its
#: modules state ``from __future__ import annotations``: their bytecode has the flag instead).
NOT_LOADED = {"select", "fcntl", "_struct", "struct", "encodings.ascii", "__future__"}


class Supervisor:
    """Accepts one client on ``<dir>/sock``; answers its attach with a hello, then reads what it
    sends (``pause_s`` before the first byte after the hello: a slow reader) and answers a ``ping``
    with a ``pong``."""

    def __init__(self, kdir: Path, pause_s: float = 0.0) -> None:
        (kdir / "token").write_text(TOKEN)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(str(kdir / "sock"))
        self.listener.listen(1)
        self.pause_s = pause_s
        self.frames: list[dict] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        decoder, paused = FrameDecoder(), False
        with conn, self.listener:
            while data := conn.recv(65536):
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    header, blobs = frame
                    self.frames.append({**header, "blob_bytes": sum(map(len, blobs))})
                    if header["type"] == "attach":
                        conn.sendall(encode_frame({"type": "hello", "proto": 1}))
                        if self.pause_s and not paused:
                            paused = True
                            time.sleep(self.pause_s)  # the slow reader this case is about
                    elif header["type"] == "ping":
                        conn.sendall(encode_frame({"type": "pong", "id": header["id"]}))


def poll(kdir: Path, **params: object) -> tuple[subprocess.CompletedProcess[str], scripts.ClientOutput]:
    runner = write_runner(str(kdir), runner_zipapp("compact"))
    done = subprocess.run([sys.executable, "-I", "-S", "-B", "-X", "importtime", "-c", scripts.CLIENT_BOOT, runner,
                           str(kdir), "-"], input=scripts.params(**params) + "\n", capture_output=True, text=True,
                          timeout=60)
    return done, scripts.parse_client_output(done.stdout)


def test_a_poll_that_gets_its_reply_loads_nothing_it_does_not_use(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path)
    ping = encode_frame({"type": "ping", "id": 7})

    done, out = poll(tmp_path, frames=scripts.b64(ping), wait=[7], deadline_s=20.0, pickup_s=0.0)

    assert (done.returncode, out.status, out.sent) == (0, "done", True), done
    assert [f["type"] for f in supervisor.frames] == ["attach", "ping"] and supervisor.frames[0]["token"] == TOKEN
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert loaded and not loaded & NOT_LOADED, sorted(loaded & NOT_LOADED)


def test_a_big_frame_dropped_while_a_poll_waits_goes_out_whole_to_a_slow_supervisor(tmp_path: Path) -> None:
    supervisor = Supervisor(tmp_path, pause_s=1.0)
    big = encode_frame({"type": "tool_result", "id": "t1"}, [b"v" * (4 << 20)])  # far over a socket's buffer
    ping = encode_frame({"type": "ping", "id": 9})

    def drop() -> None:  # as the host's drop command does: written aside, then renamed into place
        deadline = time.monotonic() + 30.0
        while not supervisor.frames and time.monotonic() < deadline:  # the poll has attached: it waits now
            time.sleep(0.01)
        (tmp_path / "q-0000000005.tmp").write_text(scripts.b64(big + ping))
        (tmp_path / "q-0000000005.tmp").rename(tmp_path / "q-0000000005")

    dropper = threading.Thread(target=drop)
    dropper.start()
    done, out = poll(tmp_path, wait=[9], deadline_s=20.0, pickup_s=15.0, early=0)
    dropper.join(30)

    assert (done.returncode, out.status) == (0, "done"), done  # not "eof": the send was not cut at a wait's timeout
    assert [(f["type"], f["blob_bytes"]) for f in supervisor.frames] == [
        ("attach", 0), ("tool_result", 4 << 20), ("ping", 0)]
