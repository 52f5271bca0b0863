"""Seen: with ``TMPDIR`` whose ``pytest-hermes-kernel-<uid>`` another user made first (mode 0777, or
a symlink, or a file), ``hermes-kernel doctor`` said ``docker ok`` and ``ssh ok`` (exit 0), and
then every docker and ssh test of the run errored at setup: "UnsafeRunDirError: refusing to keep
run files in .../pytest-hermes-kernel-0: its mode is 0777, not 0700". Now the doctor says ``NO``
for both with that reason and the hint to point ``TMPDIR`` elsewhere; local and filecell, which
keep no run files, stay ``ok``."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pytest_hermes_kernel import cli


@pytest.fixture
def engine_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A docker engine that answers and has the image, whatever this machine has."""
    monkeypatch.setattr(cli, "_check_docker_engine", lambda url=None: (True, "docker engine 28.0 at unix:///x.sock"))
    monkeypatch.setattr(cli, "_check_image", lambda url=None: (True, "image present", ""))


@pytest.mark.parametrize("how", ["0777", "symlink", "file"])
def test_doctor_says_no_for_docker_and_ssh_when_their_run_files_cannot_be_kept(
        engine_answers: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        how: str) -> None:
    pytest.importorskip("paramiko")
    user_dir = tmp_path / f"pytest-hermes-kernel-{os.getuid()}"
    if how == "0777":
        user_dir.mkdir()
        os.chmod(user_dir, 0o777)
    elif how == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        user_dir.symlink_to(tmp_path / "elsewhere")
    else:
        user_dir.write_text("")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # $TMPDIR, as tempfile caches it

    assert cli.main(["doctor", "local", "docker", "ssh", "filecell"]) == 1

    lines = capsys.readouterr().out.splitlines()
    said = {line.split()[0]: line for line in lines if line and not line.startswith(" ")}
    for name in ("docker", "ssh"):
        assert said[name].startswith(f"{name:9} NO ") and str(user_dir) in said[name], lines
    assert said["local"].split()[1] == "ok" and said["filecell"].split()[1] == "ok", lines
    assert any("TMPDIR" in line and "Hint" in line for line in lines), lines
