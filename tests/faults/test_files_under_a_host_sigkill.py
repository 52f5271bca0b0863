"""Files move in and out of a ``hermes_host_sigkill`` kernel as out of any other: its host harness
forwards ``upload``/``download`` (they raised ``AttributeError: 'HarnessKernel' object has no
attribute 'upload'``), and once the host is killed a transfer says so (``HostGoneError``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_hermes_kernel.errors import HostGoneError


@pytest.mark.hermes_host_sigkill(after_cell=1)
def test_files_move_in_and_out_until_the_host_is_killed(hermes_kernel, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data.txt").write_text("hello")
    monkeypatch.chdir(tmp_path)  # a relative local path is the test's, not the harness host's
    assert hermes_kernel.upload("data.txt", "in.txt").files == 1
    assert hermes_kernel.execute("open('in.txt').read()").value == "'hello'"
    assert hermes_kernel.download("in.txt", "back.txt").bytes == 5
    assert (tmp_path / "back.txt").read_text() == "hello"
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("1")
    with pytest.raises(HostGoneError):
        hermes_kernel.upload("data.txt", "again.txt")
