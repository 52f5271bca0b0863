"""A container's or ssh host's kernel server (``server --stdio``) attaches to each kernel's socket
right after the kernel is made. A kernel that ends at once (a cwd it cannot enter) may be gone by
then, and the attach's ``connect`` was refused: the server died of the uncaught error, so every
kernel on its stream lost its channel, and the start fell back to a plain spawn, whose error read
otherwise (``docker transport: cannot enter the working directory ... in container``, not the
runner's ``died during start (exit code 70)`` with its log). Found on docker, where a kernel taken
from the server's spare (kernel/runner/spare.py) ends sooner after its claim than a fork does
(1 start in 3 there). Now the start is answered, its channel closed at once, and its exit told, as
for a kernel that ended just after the attach.

Run here as the docker and ssh transports run it (a process whose stdin and stdout are the stream);
each start after the first takes the spare the server forked after the one before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_remote_server_spawn_dirs import StdioServer

STARTS = 20  # the kernel ends right after its claim: on the old code at least one attach was refused


@pytest.fixture
def server(tmp_path: Path):
    made = StdioServer(tmp_path / "server")
    yield made
    made.close()


def _until(server: StdioServer, done) -> list[dict]:
    frames: list[dict] = []
    while not done(frames):
        frames.append(server.reply())
    return frames


def test_kernels_that_end_at_once_are_told_ended_and_the_server_serves_on(server, tmp_path):
    for n in range(STARTS):
        config = {"kernel_dir": str(tmp_path / "kernels" / f"k{n}"), "kernel_id": f"{n:032d}", "token": "t",
                  "cwd": str(tmp_path / "no-such-dir"), "log": str(tmp_path / f"k{n}.log")}
        server.send({"type": "spawn", "id": n, "config": config})
        (spawned,) = [f for f in _until(server, lambda fs: any(f.get("id") == n for f in fs)) if f.get("id") == n]
        assert spawned["type"] == "spawned", spawned
        frames = _until(server, lambda fs: {"closed", "exited"} <= {f["type"] for f in fs})
        assert {"type": "closed", "chan": spawned["chan"]} in frames, frames
        assert {"type": "exited", "pid": spawned["pid"], "exit_code": 70, "signal": None} in frames, frames
        assert "cannot enter the working directory" in (tmp_path / f"k{n}.log").read_text()

    server.send({"type": "alive", "id": "last", "pid": 1})
    assert _until(server, lambda fs: any(f.get("id") == "last" for f in fs))[-1]["type"] == "alive"
