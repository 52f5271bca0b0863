"""Seen: a download into a directory that cannot be written (a read-only file system, a 0500
directory of an ordinary user) failed with "FileTransferError: /ro/.hermes-download-dvizd53d:
Read-only file system": the staging dir the download could not make, a name the user never gave,
where the README promises the local path and never the temp dir. Now it names the directory."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel import KernelHandle
from pytest_hermes_kernel.errors import FileTransferError
from tests.support import tmpfs_at

from .test_handed_b45_file_transfers import ok

pytestmark = pytest.mark.hermes_transports("local")  # the local side is the same on every transport


@pytest.fixture(params=["read-only mount", "0500 dir"])
def unwritable_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "ro"
    where.mkdir()
    if request.param == "0500 dir":
        if os.geteuid() == 0:
            pytest.skip("root writes into a 0500 directory: the read-only mount case stands for it")
        os.chmod(where, 0o500)
        yield where
        os.chmod(where, 0o700)
        return
    with tmpfs_at(where, "size=64k,ro", "a read-only tmpfs"):
        yield where


def test_a_download_into_a_dir_that_cannot_be_written_names_it(hermes_kernel: KernelHandle,
                                                                 unwritable_dir: Path) -> None:
    ok(hermes_kernel, "open('out.txt', 'w').write('data')")
    with pytest.raises(FileTransferError) as info:
        hermes_kernel.download("out.txt", unwritable_dir / "out.txt")
    text = str(info.value)
    assert ".hermes-download-" not in text and info.value.path == str(unwritable_dir), text
    assert text.startswith(f"{unwritable_dir}: "), text
    assert os.listdir(unwritable_dir) == []
