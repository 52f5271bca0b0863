"""Seen: ``pytest --hermes-keep-failed`` with a ``TMPDIR`` whose ``pytest-hermes-kernel-<uid>``
another user made first (mode 0777, or a symlink): a failed test's local kernel could not be
kept, and instead of "could not be kept, so it was shut down: <why>" the test got a second error,
an ``UnsafeRunDirError`` traceback from the fixture's teardown, and the kernel was not shut down
(the leak check found it still running: its dir and 2 processes). The failed keep's clean-up
removed its record first, and that removal met the same unsafe dir and raised before the
shutdown. Now the kernel is shut down and the summary says why it was not kept."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.plugin.keep import _keep_past_session
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, wait_until


@pytest.mark.parametrize("how", ["0777", "symlink"])
def test_a_kernel_whose_record_cannot_be_written_is_shut_down_saying_why(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        how: str) -> None:
    user_dir = tmp_path / f"pytest-hermes-kernel-{os.getuid()}"
    if how == "0777":
        user_dir.mkdir()
        os.chmod(user_dir, 0o777)
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        user_dir.symlink_to(tmp_path / "elsewhere")
    transport = LocalTransport()
    handle = KernelHandle(transport).start()
    pids = (handle.launched.pid, handle.pid)
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # $TMPDIR of the run, as tempfile caches it
        record, text = _keep_past_session("test_x.py::test_x[local]", handle, 60.0)
        monkeypatch.undo()

        assert record is None
        assert f"kernel {handle.kernel_id} could not be kept, so it was shut down: " in text, text
        assert str(user_dir) in text, text
        assert not handle.alive
        wait_until(lambda: all(gone(pid) for pid in pids), 10.0, what="the kernel's runner and worker to end")
    finally:
        monkeypatch.undo()
        handle.shutdown()
        transport.close()
