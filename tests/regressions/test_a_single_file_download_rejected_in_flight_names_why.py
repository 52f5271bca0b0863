"""Seen (2026-12-06, while closing the docker download race): a download of one file that the
transport rejected as it fetched it (it was swapped for a symlink after the listing: "changed
during the copy") failed with the *local* path and ``No such file or directory``, as if the user's
destination were missing; the reason the file was not copied was nowhere in the error.

Fixed: the download's error names the kernel-side file and the transport's reason, and says that
nothing was written to the destination.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import FileTransferError
from pytest_hermes_kernel.transports.ssh.files import SftpFiles

pytestmark = pytest.mark.usefixtures("docker_ready")


def test_a_one_file_download_swapped_for_a_symlink_mid_copy_names_the_file_and_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fetch = SftpFiles.fetch

    def swap_then_fetch(self: SftpFiles, parts: tuple[str, ...], *args: Any) -> None:  # a cell's move, just then
        self.sftp.rename(self.path(parts), self.path(parts) + "-old")
        self.sftp.symlink("/etc/hostname", self.path(parts))
        fetch(self, parts, *args)

    with start_kernel("ssh") as kernel:
        assert kernel.execute("open('f', 'w').write('data')").status == "ok"
        monkeypatch.setattr(SftpFiles, "fetch", swap_then_fetch)
        with pytest.raises(FileTransferError) as info:
            kernel.download("f", tmp_path / "got")
    text = str(info.value)
    assert text.startswith("f: changed during the copy"), text
    assert "nothing was written to" in text and "No such file" not in text, text
    assert info.value.path == "f"
    assert list(tmp_path.iterdir()) == []
