"""A filecell kernel dir whose ``runner.pid`` is a fifo hangs neither ``hermes-kernel sweep`` nor
the reap of a crashed xdist worker's kernels.

A local filecell runner's kernel dir is its cells' working dir, so a cell can replace the
``runner.pid`` its runner wrote there with a fifo (``os.remove``, ``os.mkfifo``). Both readers of
that file opened it with ``open``, which on a fifo waits for a writer for good:
``hermes-kernel sweep kernel-dirs`` (``--dry-run`` too) hung, and so did the controller's
``pytest_testnodedown`` once that kernel's worker crashed. The kit's records and the kernel dirs'
``runner.host`` were already read only as regular files (2026-12-06); now ``runner.pid`` is too:
a dir whose pid file is no regular file is not judged (as one still starting).
"""

from __future__ import annotations

import os
import random
import subprocess
import uuid
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.plugin.crashes import reap_local
from pytest_hermes_kernel.transports.filecell import transport as filecell
from pytest_hermes_kernel.transports.kernel_dirs import KERNEL_DIR_ENV
from tests.support import environ_of, hang_alarm, wait_until


@pytest.fixture
def fifo_kdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A filecell kernel dir (under a root of the test's own) whose ``runner.pid`` is a fifo."""
    monkeypatch.setenv(KERNEL_DIR_ENV, str(tmp_path / "local"))
    monkeypatch.setattr(filecell, "DEFAULT_ROOT", str(tmp_path / "filecell"))
    monkeypatch.setattr(filecell, "LEGACY_ROOT", str(tmp_path / "legacy"))
    kdir = tmp_path / "filecell" / "k-000000000000-0000000000000000"
    kdir.mkdir(parents=True)
    os.mkfifo(kdir / "runner.pid")
    return kdir


def test_sweep_kernel_dirs_answers_beside_a_fifo_pid_file(fifo_kdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for dry_run in (["--dry-run"], []):
        with hang_alarm(20, "hermes-kernel sweep kernel-dirs beside a fifo runner.pid"):
            code = main(["sweep", *dry_run, "kernel-dirs"])

        out, err = capsys.readouterr()
        assert code == 0, out + err
        assert str(fifo_kdir) not in out, out  # nothing says whose it is: not judged
    assert fifo_kdir.is_dir()


def test_the_reap_of_a_crashed_worker_answers_beside_a_fifo_pid_file(fifo_kdir: Path) -> None:
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as fh:
        host = int(fh.read()) + random.randrange(1000, 1_000_000)  # a host pid no process has
    env = {**os.environ, "HERMES_KERNEL_ID": uuid.uuid4().hex, "HERMES_KERNEL_HOST_PID": str(host)}
    runner = subprocess.Popen(["sleep", "300"], env=env, cwd=fifo_kdir, start_new_session=True)
    try:
        wait_until(lambda: "HERMES_KERNEL_HOST_PID" in environ_of(runner.pid), 5.0, what="the process to have exec'd with its marker")

        with hang_alarm(20, "the crashed worker's reap beside a fifo runner.pid"):
            assert reap_local(host) == 1

        assert runner.wait(5) == -9
    finally:
        if runner.poll() is None:
            runner.kill()
        runner.wait(5)


