"""Found by a breaker helper (the host out of resources, 2026-12-06): a filecell kernel whose root's
file system had filled while it ran lost its kernel the first time a frame had to be dropped into
its dir (a timed-out cell's interrupt, a tool's result, while a poll is attached), and the death
note said only ``could not drop frames into <kdir>: sh: 1: printf: printf: I/O error``: nothing
said the disk was full. The note now names the backend's full disk and what to do.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport
from tests.engines import fill_disk
from tests.support import tmpfs_at



def test_a_frame_the_full_disk_refused_names_the_full_disk(short_dir: Path) -> None:
    disk = short_dir
    with tmpfs_at(disk, "size=1m", "a small tmpfs"):
        transport = make_transport("filecell", root=str(disk / "fc"))
        try:
            kernel = start_kernel(transport)
            assert kernel.execute("x = 41").status == "ok"
            fill_disk(str(disk / "fill"))
            result = kernel.execute("import time; time.sleep(30)", timeout=1)  # its interrupt is a dropped frame
            os.remove(disk / "fill")
            kernel.shutdown()
        finally:
            transport.close()
    note = result.kernel.note
    assert result.status == "died" and "could not drop frames into" in note, result
    assert "the backend's disk has 0 KiB free at" in note and "Hint: free space there" in note, note
