"""Seen: a kernel started with ``cwd=`` naming a symlink to a directory (``~/project`` linked to
``/data/project``, a checkout reached through a link) ran its cells there, but every upload and
download was refused: "the working dir /tmp/x/link is a symlink (never followed)", while the same
dir given as ``/tmp/x/link/`` or ``/tmp/x/link/sub`` took them, on every transport. The working
dir's last component is opened without following a symlink so that a cell that swapped its own
kernel dir for one is refused; a ``cwd=`` is the host's choice, as its parent components are, and
is now followed whole, except on docker, whose archives the engine reads as root: there a cell
that swapped its ``cwd=`` for a link to ``/etc`` had the host fetch ``/etc/shadow``, so a docker
``cwd=`` symlink is refused as before
(``test_a_docker_cwd_a_cell_swapped_for_a_symlink_reads_nothing_as_root.py``). A symlink planted
under it, and a kernel dir a cell swapped for a link, are still refused."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from pytest_hermes_kernel.errors import UnsafePathError

from .test_handed_b45_file_transfers import ok

MAKE = ("import os, tempfile\nbase = tempfile.mkdtemp(prefix='cwd-link-')\nos.chmod(base, 0o755)\n"
        "os.mkdir(base + '/real')\nos.symlink(base + '/real', base + '/link')\nbase")


@pytest.mark.hermes_transports("local", "ssh", "filecell")  # docker refuses it: its archives are read as root
def test_a_cwd_that_is_a_symlink_to_a_dir_takes_uploads_and_downloads(hermes_kernel_factory: Any,
                                                                      tmp_path: Path) -> None:
    helper = hermes_kernel_factory()
    base = ast.literal_eval(ok(helper, MAKE) or "")
    try:
        kernel = hermes_kernel_factory(cwd=f"{base}/link")
        (tmp_path / "in.txt").write_text("up")
        report = kernel.upload(tmp_path / "in.txt", "in.txt")
        assert report.complete and report.files == 1, report
        assert ok(kernel, "open('in.txt').read()") == "'up'"
        assert ok(helper, f"open({base!r} + '/real/in.txt').read()") == "'up'"  # in the dir the link names
        ok(kernel, "os_ = __import__('os'); os_.makedirs('out'); open('out/r.txt', 'w').write('down')")
        report = kernel.download("out", tmp_path / "out")
        assert report.complete and report.files == 1, report
        assert (tmp_path / "out" / "r.txt").read_text() == "down"
        ok(kernel, "os_.symlink('/etc', 'planted')")  # under the working dir a symlink is still refused
        with pytest.raises(UnsafePathError) as info:
            kernel.download("planted", tmp_path / "planted")
        assert info.value.path == "planted", str(info.value)
    finally:
        ok(helper, f"import shutil; shutil.rmtree({base!r})")


@pytest.mark.hermes_transports("local", "docker", "ssh")  # filecell's kernel is cut off by it (docs/reference.md)
def test_a_kernel_dir_a_cell_swapped_for_a_symlink_is_still_refused(hermes_kernel_factory: Any, tmp_path: Path) -> None:
    kernel = hermes_kernel_factory()
    kdir = ast.literal_eval(ok(kernel, "import os, tempfile\nkd = os.getcwd()\nelsewhere = tempfile.mkdtemp()\n"
                                       "os.rename(kd, kd + '.moved')\nos.symlink(elsewhere, kd)\nkd") or "")
    (tmp_path / "f").write_text("x")
    try:
        with pytest.raises(UnsafePathError) as info:
            kernel.upload(tmp_path / "f", "f")
        assert str(info.value) == f"the working dir {kdir} is a symlink (never followed)", str(info.value)
    finally:  # put the kernel dir back, for its cleanup
        ok(kernel, "import shutil\nos.unlink(kd)\nos.rename(kd + '.moved', kd)\nshutil.rmtree(elsewhere)")
