"""Found by a breaker helper (the host out of resources, 2026-12-06): an ssh upload onto a kernel
host whose disk was full returned a complete ``TransferReport`` (``files=1, bytes=300000``) for a
file the disk cut at 96 KiB; an upload over an existing file replaced it by the cut one (its old
content lost), and a tree came over with its files cut or empty. paramiko's ``close()`` of a
pipelined SFTP write reads none of the writes' answers, so the server's ``Failure`` went unseen.

Now each write's answer is read and the file's size checked: the upload is a
:class:`FileTransferError` naming the entry and a full disk, nothing of it is left, and the old
file is as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import FileTransferError
from tests.odd_hosts import odd_ssh_host

pytestmark = pytest.mark.usefixtures("docker_ready")

SETUP = ("mkdir -p /small/wd/keep && echo old > /small/wd/keep/x && chown -R hermes /small/wd"
         " && dd if=/dev/zero of=/small/fill bs=1k count=160 2>/dev/null")


def test_an_upload_onto_a_full_disk_names_it_and_leaves_what_was_there(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.bin").write_bytes(b"a" * 300_000)  # more than the ~90 KiB free
    (src / "sub" / "b.txt").write_text("b")
    with odd_ssh_host(tmp_path, setup=SETUP, tmpfs={"/small": "size=256k,mode=0755"}) as host:
        transport = host.transport()
        try:
            kernel = start_kernel(transport, cwd="/small/wd")
            for source, destination, shown in ((src / "a.bin", "new.bin", "new.bin"), (src / "a.bin", "keep/x", "keep/x"),
                                               (src, "tree", "tree/a.bin")):
                with pytest.raises(FileTransferError) as info:  # a complete TransferReport
                    kernel.upload(source, destination)
                assert info.value.path == shown, info.value
                assert "could not be written: the SFTP server refused a write" in str(info.value), info.value
                assert "disk full" in str(info.value), info.value
            kernel.shutdown()
        finally:
            transport.close()
        left = host.run("cd /small/wd && find . -mindepth 1 | sort && cat keep/x")
    assert left.split() == ["./keep", "./keep/x", "old"], left  # the old file kept, nothing of the uploads
