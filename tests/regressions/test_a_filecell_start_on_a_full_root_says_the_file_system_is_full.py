"""Found by a breaker helper (the host out of resources, 2026-12-06): a filecell kernel started
while the file system of its ``root=`` was full (or had less room than the runner's ~200 KB) failed
with the runner setup's ``OSError: [Errno 28] No space left on device`` and ``Hint: the backend
needs sh, python3 ('python3') and a writable '<root>'``: all three were there, the root writable.
The hint now says the root's file system is full, and nothing of the failed start is left there.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import make_transport
from tests.support import tmpfs_at



@pytest.mark.parametrize("room_kib", [0, 48])
def test_a_filecell_start_on_a_full_root_names_the_full_file_system(short_dir: Path, room_kib: int) -> None:
    disk = short_dir
    with tmpfs_at(disk, "size=1m", "a small tmpfs"):
        root = disk / "fc"
        root.mkdir(mode=0o700)
        hog = os.open(disk / "hog", os.O_WRONLY | os.O_CREAT)  # the disk filled, then room_kib given back
        try:
            while os.write(hog, b"x" * 4096):
                pass
        except OSError:
            os.ftruncate(hog, max(0, os.lseek(hog, 0, os.SEEK_CUR) - room_kib * 1024))
        finally:
            os.close(hog)
        transport = make_transport("filecell", root=str(root))
        try:
            with pytest.raises(KernelStartError) as info:
                start_kernel(transport, timeout=30).shutdown()
        finally:
            transport.close()
        text = str(info.value)
        assert "No space left on device" in text, text
        assert f"Hint: the file system of {str(root)!r} on the backend is full" in text, text
        assert "the backend needs sh" not in text, text
        assert os.listdir(root) == [], os.listdir(root)  # the failed start's kernel dir went
