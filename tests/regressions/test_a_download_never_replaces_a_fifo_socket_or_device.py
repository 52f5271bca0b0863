"""Seen: ``k.download("out.txt", dest)`` where ``dest`` already existed as a FIFO, a unix socket or
a device node replaced it with the downloaded file (renamed over it) and reported success: a
reader waiting on the FIFO never got the data, a service's socket was gone, and run as root a
download to ``/dev/null`` turned the machine's ``/dev/null`` into a regular file. The README says
the destination must not exist or be a regular file that a file replaces. Now anything else is a
``FileTransferError`` naming the path and what it is, and it is left as it was. (The device case
is not run here: it would need ``mknod``; the check is the same ``lstat`` test.)"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.errors import FileTransferError

from .test_handed_b45_file_transfers import ok


@pytest.mark.parametrize("what", ["fifo", "socket"])
def test_a_download_onto_a_fifo_or_socket_is_refused_and_leaves_it(hermes_kernel: KernelHandle, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch, what: str) -> None:
    ok(hermes_kernel, "open('out.txt', 'w').write('data')")
    dest = tmp_path / what
    holder = None
    if what == "fifo":
        os.mkfifo(dest)
    else:
        holder = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        monkeypatch.chdir(tmp_path)  # a relative name: a long basetemp would not fit a socket address
        holder.bind(what)
    try:
        with pytest.raises(FileTransferError) as info:
            hermes_kernel.download("out.txt", dest)
        assert str(dest) in str(info.value) and f"a {what}" in str(info.value), str(info.value)
        mode = os.lstat(dest).st_mode
        assert (stat.S_ISFIFO(mode) if what == "fifo" else stat.S_ISSOCK(mode)), f"{dest} was replaced"
        assert sorted(p.name for p in tmp_path.iterdir()) == [what]  # no staging dir left beside it
    finally:
        if holder is not None:
            holder.close()


def test_a_download_onto_a_regular_file_still_replaces_it(hermes_kernel: KernelHandle, tmp_path: Path) -> None:
    ok(hermes_kernel, "open('out.txt', 'w').write('data')")
    (tmp_path / "old.txt").write_text("old")
    assert hermes_kernel.download("out.txt", tmp_path / "old.txt").complete
    assert (tmp_path / "old.txt").read_text() == "data"
