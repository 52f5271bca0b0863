"""Found by a breaker helper (2026-12-06, malformed input): a local kernel dir whose host file
(``runner.host``) is a fifo made ``hermes-kernel sweep kernel-dirs`` (and ``--dry-run``) hang for
good, and so would the registry's stale-dir sweep and the leak probe that read it: ``open`` of a
fifo waits for a writer. It is now read only as a regular file; a dir whose host file is none
says nothing of its host, as one without the file (the pid in its name decides).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.transports.kernel_dirs import HOST_FILE, KERNEL_DIR_ENV, made_in_this_pid_namespace
from tests.support import hang_alarm

GONE_PID = 4_000_000  # over Linux's pid_max limit (2^22): no process has it


@pytest.fixture
def fifo_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KERNEL_DIR_ENV, str(tmp_path))
    kdir = tmp_path / f"hermes-kernel-{GONE_PID}-abc"
    kdir.mkdir(mode=0o700)
    os.mkfifo(kdir / HOST_FILE)
    return kdir


def test_sweep_dry_run_answers_and_names_the_dir(fifo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with hang_alarm(20, "hermes-kernel sweep --dry-run kernel-dirs beside a fifo host file"):
        code = main(["sweep", "--dry-run", "kernel-dirs"])

    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert f"would remove kernel dir {fifo_dir} (its host is gone" in out, out


def test_the_leak_probes_look_answers(fifo_dir: Path) -> None:
    with hang_alarm(20, "the leak probe's look at a fifo host file"):
        assert made_in_this_pid_namespace(str(fifo_dir)) is True
