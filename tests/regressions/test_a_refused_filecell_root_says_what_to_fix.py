"""Seen: a filecell ``root=`` that is a symlink, or a directory open to group and others, failed
its start with "HERMES-FILECELL-ERROR root: ... is open to group or others (not 0700)" and then
"Hint: the backend needs sh, python3 ('python3') and a writable '/tmp/x'": the root was writable,
and making it more so is the opposite of the fix. Now the hint says what the root must be."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel.transports import FileCellTransport, LocalShellBackend
from tests.support import start_error


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A fresh directory with a short path (a filecell root must fit unix socket paths: an xdist
    worker's ``tmp_path`` is too long for one)."""
    path = Path(tempfile.mkdtemp(prefix="fcroot-"))
    yield path
    shutil.rmtree(path)


@pytest.mark.parametrize("how", ["symlink", "0777"])
def test_a_refused_filecell_root_hints_at_a_private_directory_not_a_writable_one(short_tmp: Path, how: str) -> None:
    tmp_path = short_tmp
    root = tmp_path / "root"
    if how == "symlink":
        (tmp_path / "real").mkdir(mode=0o700)
        root.symlink_to(tmp_path / "real")
    else:
        root.mkdir()
        os.chmod(root, 0o777)
    text = start_error(FileCellTransport(LocalShellBackend(), root=str(root)), start_timeout=30)
    assert f"the kernel root {root} " in text.splitlines()[0], text  # (the launch's line, in plain words)
    hint = text.split("\nHint: ", 1)[1]
    assert "writable" not in hint and "(0700)" in hint and "point root= elsewhere" in hint, text


def test_a_root_that_cannot_be_made_is_named_with_mkdirs_reason(short_tmp: Path) -> None:
    """Seen: a root that could not be made (on a read-only file system, under a dir the user may not
    write, under a file) failed with "HERMES-FILECELL-ERROR root: /ro/fc is not a directory owned by
    bob", its hint asking for a private directory: the mkdir's own reason was thrown away. Now the
    line says the root cannot be made and why, and the hint says to make it or point elsewhere."""
    (short_tmp / "file").write_text("")
    root = short_tmp / "file" / "fc"  # under a file: mkdir fails for root and any user alike
    text = start_error(FileCellTransport(LocalShellBackend(), root=str(root)), start_timeout=30)
    line = text.splitlines()[0]  # the launch's line, in plain words
    assert f"the kernel root {root} cannot be made: " in line and "Not a directory" in line, text
    assert "owned by" not in text, text
    hint = text.split("\nHint: ", 1)[1]
    assert "make it" in hint and "point root= elsewhere" in hint and "(0700)" not in hint, text
    assert sorted(p.name for p in short_tmp.iterdir()) == ["file"]
