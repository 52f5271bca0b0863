"""``hermes-kernel ls | head -n 1``: a reader that stops early (its pipe closed) ends the command
quietly with 141 (128 + SIGPIPE, what a shell shows for a command a closed pipe ended), not a
``BrokenPipeError`` traceback after the header line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PIPE_CLOSED = 128 + 13  # SIGPIPE


@pytest.mark.parametrize("argv", [["ls"], ["doctor", "local"]], ids=["ls", "doctor"])
def test_output_to_a_closed_pipe_ends_the_command_without_a_traceback(argv: list[str], tmp_path: Path) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line: every write fails with EPIPE
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", *argv], stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60, env={**os.environ, "TMPDIR": str(tmp_path)})
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == PIPE_CLOSED, done.stderr


@pytest.mark.parametrize("buffered", [False, True], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("argv", [["ls"], ["doctor", "local"]], ids=["ls", "doctor"])
def test_output_to_a_full_device_is_one_line_and_exit_1(argv: list[str], buffered: bool, tmp_path: Path) -> None:
    """``hermes-kernel ls > /dev/full``: a write that fails (ENOSPC) was an ``OSError`` traceback."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    if buffered:
        env.pop("PYTHONUNBUFFERED", None)
    else:
        env["PYTHONUNBUFFERED"] = "1"
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", *argv], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60, env=env)
    assert "Traceback" not in done.stderr, done.stderr
    assert "hermes-kernel: cannot write the output: No space left on device" in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr


def test_a_full_disk_met_elsewhere_is_not_called_an_output_failure(monkeypatch, capsys) -> None:
    """The catch of ``> /dev/full`` took every ENOSPC for a failed write of the output (a
    ``build-image`` that fills ``/tmp`` would have said "cannot write the output" and lost its path)."""
    import errno

    from pytest_hermes_kernel import cli

    def full_elsewhere(argv):
        raise OSError(errno.ENOSPC, "No space left on device", "/tmp/rootfs")

    monkeypatch.setattr(cli, "_main", full_elsewhere)
    with pytest.raises(OSError, match="/tmp/rootfs"):
        cli.main(["ls"])
    assert "cannot write the output" not in capsys.readouterr().err
