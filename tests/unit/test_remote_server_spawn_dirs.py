"""``server --stdio`` (the kernel server of a container or ssh host) removes only the kernel dirs
it made: a spawn asked for a dir that exists already is refused and the dir is left as it was
(it removed it whole before: a second spawn naming a live kernel's dir took its socket and files).
Run here as the docker and ssh transports run it: a process whose stdin and stdout are the stream.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel.kernel.runner.environ import KERNEL_ID_NAME, SERVER_KERNEL_ID
from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, encode_frame

REPLY_TIMEOUT_S = 20.0


class StdioServer:
    """A ``server --stdio`` process and the host's end of its stream."""

    def __init__(self, server_dir: Path) -> None:
        env = {**os.environ, KERNEL_ID_NAME: SERVER_KERNEL_ID}  # the placeholder a kernel's id is written over
        self.proc = subprocess.Popen([sys.executable, "-m", "pytest_hermes_kernel.kernel.runner", "server", "--stdio"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        self.decoder = FrameDecoder()
        self.send({"type": "config", "config": {"server_dir": str(server_dir), "idle_timeout": 60}})
        assert self.reply()["type"] == "hello"

    def send(self, header: dict) -> None:
        self.proc.stdin.write(encode_frame(header))
        self.proc.stdin.flush()

    def reply(self) -> dict:
        """The next frame from the server (its stdout is a pipe: a dead server ends the read)."""
        while (frame := self.decoder.next_frame()) is None:
            chunk = self.proc.stdout.read1(65536)
            assert chunk, "the server closed its stream"
            self.decoder.feed(chunk)
        return frame[0]

    def close(self) -> None:
        self.proc.stdin.close()  # EOF ends the server at once
        self.proc.wait(REPLY_TIMEOUT_S)
        self.proc.stdout.close()


@pytest.fixture
def server(tmp_path: Path):
    made = StdioServer(tmp_path / "server")
    yield made
    made.close()


def test_a_spawn_into_a_dir_that_exists_is_refused_and_the_dir_is_left_as_it_was(server, tmp_path):
    kdir = tmp_path / "kernels" / "k-taken"
    kdir.mkdir(parents=True)
    (kdir / "sock").write_text("a live kernel's socket")

    server.send({"type": "spawn", "id": 1, "config": {"kernel_dir": str(kdir), "kernel_id": "k" * 32, "token": "t"}})
    answer = server.reply()

    assert (kdir / "sock").is_file() and (kdir / "sock").read_text() == "a live kernel's socket", answer
    assert answer["type"] == "error" and "exists already" in answer["error"], answer


def test_rmdir_of_a_dir_the_server_did_not_make_is_refused(server, tmp_path):
    kdir = tmp_path / "kernels" / "k-other"
    kdir.mkdir(parents=True)

    server.send({"type": "rmdir", "id": 2, "dir": str(kdir)})
    answer = server.reply()

    assert answer["type"] == "error" and "not a kernel dir of this server" in answer["error"], answer
    assert kdir.is_dir()
