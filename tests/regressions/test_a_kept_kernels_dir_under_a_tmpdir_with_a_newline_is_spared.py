"""Seen: a run whose ``TMPDIR`` held a newline (``/tmp/ci\\nrun``) kept a local kernel with
``--hermes-keep-failed``; a sweep run with another ``TMPDIR`` (``hermes-kernel sweep
kernel-dirs``, a registry's reaper) then counted its kernel dir stale and would remove it, socket
and all, while the kernel lived out its TTL. The dir's host file names the host's temp dir on its
second line, where the kept record is: a newline in it cut the path, and no record was found
there. Now such a temp dir is written quoted (JSON) and read back whole; any other is written as
before (an older kit reads it)."""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.transports.kernel_dirs import HOST_FILE, KERNEL_DIR_ENV, KERNEL_DIR_PREFIX, discard_kernel_dir, \
    new_kernel_dir, stale_kernel_dirs

WEEK_S = 7 * 86400.0


def _dead_pid() -> int:
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as fh:
        return int(fh.read()) + 1  # no process can have it


@pytest.mark.parametrize("odd", ["\n", "\u2028", '"'], ids=["newline", "line-separator", "quote"])
def test_a_kept_kernels_dir_is_spared_by_a_sweep_with_another_tmpdir(tmp_path: Path, private_tmp: Path,
                                                                     monkeypatch: pytest.MonkeyPatch, odd: str) -> None:
    keeping = tmp_path / f"ci{odd}run"  # the temp dir of the run that kept the kernels
    keeping.mkdir(mode=0o700)
    root = tmp_path / "kernel-dirs"  # PYTEST_HERMES_KERNEL_DIR, shared by both runs
    root.mkdir()
    monkeypatch.setenv(KERNEL_DIR_ENV, str(root))
    dirs = {}
    for name, expired in (("kept", False), ("expired", True)):
        monkeypatch.setattr(tempfile, "tempdir", str(keeping))  # the keeping run's
        made = new_kernel_dir()  # its host file, as the keeping run writes it
        path = root / f"{KERNEL_DIR_PREFIX}{_dead_pid()}-{name}"  # that run's host is gone
        os.rename(made, path)
        at = time.time() - (7200 if expired else 0)
        kept.save(kept.KeptKernel(kernel_id=uuid.uuid4().hex, transport="local", locator={"kernel_dir": str(path)},
                                  token="t", nodeid="t.py::t", kept_at=at, detached_at=at, ttl_s=3600.0,
                                  host_pid=_dead_pid()), str(keeping))
        dirs[name] = str(path)
    monkeypatch.setattr(tempfile, "tempdir", str(private_tmp))  # the sweep's own temp dir

    assert stale_kernel_dirs(WEEK_S, root=str(root)) == [dirs["expired"]]


def test_a_plain_tmpdir_is_written_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An older kit reads the second line as the path itself."""
    monkeypatch.setenv(KERNEL_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "plain tmp é"))
    made = new_kernel_dir()
    try:
        assert Path(made, HOST_FILE).read_text(encoding="utf-8").split("\n")[1] == str(tmp_path / "plain tmp é")
    finally:
        discard_kernel_dir(made)
