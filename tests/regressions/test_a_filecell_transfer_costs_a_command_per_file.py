"""A filecell transfer costs about one backend command per file (and per 48 KiB): an upload took
three per file (create, append, chmod) and a download two (a read, then an empty read to see
the end), so 200 small files took ~35 s each way on the local shell backend.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.transports.filecell.transport import FileCellTransport


class Counting:
    """``sh -c`` through ``subprocess``, counting the commands it runs."""

    def __init__(self) -> None:
        self.calls = 0

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        self.calls += 1
        done = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
        return (128 - done.returncode if done.returncode < 0 else done.returncode), done.stdout + done.stderr


@pytest.fixture
def root() -> Iterator[str]:
    """A short kernel root of this test (a unix socket path under it must fit in 108 bytes)."""
    path = f"/tmp/hermes-count-{os.getpid()}-{os.urandom(3).hex()}"
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_small_files_cost_one_command_each_way(root: str, tmp_path: Path) -> None:
    backend = Counting()
    k = KernelHandle(FileCellTransport(backend, root=root)).start()
    src = tmp_path / "src"
    src.mkdir()
    for i in range(10):
        (src / f"f{i}").write_bytes(bytes([i]) * (i * 1000))  # f0 empty, up to 9 KB
    (src / "big").write_bytes(os.urandom(100_000))  # 3 chunks of 48 KiB
    (src / "ro").write_bytes(b"read-only")
    (src / "ro").chmod(0o444)
    try:
        before = backend.calls
        up = k.upload(src, "up")
        upload_calls = backend.calls - before
        before = backend.calls
        down = k.download("up", tmp_path / "back")
        download_calls = backend.calls - before
    finally:
        k.shutdown()

    assert (up.files, down.files) == (12, 12)
    for name in os.listdir(src):
        assert (tmp_path / "back" / name).read_bytes() == (src / name).read_bytes(), name
    assert oct((tmp_path / "back/ro").stat().st_mode & 0o777) == "0o644"  # the owner's write is kept
    # prepare, mkdir, 11 small files, 3 for big, rename: 17 (was 39); list, 11 + 3: 15 (was 27)
    assert (upload_calls, download_calls) == (17, 15)
