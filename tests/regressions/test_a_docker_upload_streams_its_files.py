"""A docker upload's tar is written a block at a time: each file was read whole into memory
first (``b"".join`` of its chunks), so memory grew with the largest file, up to the 256 MiB
default bound, though the tar itself was kept on disk. Now a file goes into the tar at the size
its listing gave, and a file that changed size since is refused by name, never cut or padded.
"""

from __future__ import annotations

import tarfile
import tempfile
import tracemalloc
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.errors import FileTransferError
from pytest_hermes_kernel.kernel.files import plan_tree
from pytest_hermes_kernel.kernel.transfer import LocalSource, local_entries

from .test_handed_b45_file_transfers import ok


def test_the_tar_of_a_32_mib_file_is_written_in_bounded_memory(tmp_path: Path) -> None:
    pytest.importorskip("docker")
    from pytest_hermes_kernel.transports.docker.files import plain_tar

    big = tmp_path / "big"
    with open(big, "wb") as fh:
        for i in range(32):
            fh.write(bytes([i]) * (1 << 20))
    plan = plan_tree(local_entries(big), str(big), 1 << 30)
    with tempfile.TemporaryFile() as buf:
        tracemalloc.start()
        try:
            plain_tar(buf, "top", plan, LocalSource(big, 1 << 30), 1000, 1000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        buf.seek(0)
        with tarfile.open(fileobj=buf) as tar:
            member = tar.next()
            assert member is not None and (member.name, member.size) == ("top", 32 << 20)
            fh = tar.extractfile(member)
            assert fh is not None and fh.read(1 << 20) == b"\0" * (1 << 20)
            fh.seek(31 << 20)
            assert fh.read() == bytes([31]) * (1 << 20)
    assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MiB for a 32 MiB file"


@pytest.mark.parametrize("listed", [5, 20], ids=["grew", "shrank"])
def test_a_file_whose_size_changed_since_its_listing_is_refused_by_name(hermes_kernel: KernelHandle, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        listed: int) -> None:
    """On every transport the upload ends as a whole: a refusal naming the file (docker) or the
    file as it is now (the others copy what they read, within the bound); never cut or padded."""
    from pytest_hermes_kernel.kernel import transfer

    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_bytes(b"0123456789")
    monkeypatch.setattr(transfer, "local_entries", lambda root: [
        e.__class__(e.parts, e.kind, listed if e.parts else e.size, e.mode, e.nlink) for e in local_entries(root)])
    try:
        report = hermes_kernel.upload(src, "up")
    except FileTransferError as exc:
        assert exc.path == str(src / "f") and "changed during the upload" in str(exc), exc
        assert ok(hermes_kernel, "import os\nsorted(n for n in os.listdir('.') if n.startswith(('.hermes', 'up')))") \
            == "[]"
    else:
        assert hermes_kernel.transport.name != "docker" and report.bytes == 10
        assert ok(hermes_kernel, "open('up/f', 'rb').read()") == repr(b"0123456789")
