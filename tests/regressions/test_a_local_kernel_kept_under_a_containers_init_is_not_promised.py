"""Seen (a breaker helper running the kit in CI job containers, 2026-12-06): ``docker run --init
... python -m pytest --hermes-keep-failed`` (tini, docker's init, the container's pid 1 and pytest
its one command) said ``kept for post-mortem: ...: kernel ID on local ...; it ends by itself 3600 s
after its last client leaves (at HH:MM:SS if none comes)`` with the ``hermes-kernel ls`` and
``sweep`` lines, for a kernel that ended a moment later: tini exits when its command does, and
the pid namespace, the kernel with it, ends with its pid 1. Without ``--init`` (pytest itself pid 1)
the same run said why the kernel is only kept until the session ends
(``test_a_local_kernel_kept_by_a_pid_namespaces_init_is_not_promised.py``); an init that runs one
command (docker-init, tini, dumb-init, catatonit) whose one command is this run is now judged the same.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.namespaced import pytest_command, start, unshare
from tests.support import RUN_TIMEOUT_S

FAILING = """
def test_load(hermes_kernel):
    hermes_kernel.execute("rows = [3, 1, 2]; total = sum(rows) + 1")
    assert hermes_kernel.execute("total").value == "6"
"""


@pytest.mark.parametrize("workers", [0, 2])
def test_a_local_kernel_under_tini_as_pid_1_is_not_promised_past_the_run(tmp_path: Path, workers: int) -> None:
    unshare()
    tini = shutil.which("tini") or shutil.which("tini-static")
    if tini is None:
        pytest.skip("needs tini, the init `docker run --init` runs (apt-get install tini)")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "test_postmortem.py").write_text(FAILING)
    command = pytest_command("--hermes-keep-failed", "test_postmortem.py")
    if workers:  # the xdist controller is tini's command, each worker its child
        at = command.index("no:xdist")
        command = command[:at - 1] + command[at + 1:] + ["-n", str(workers)]

    proc = start(tmp_path, [tini, "--", *command], TMPDIR=str(tmp))
    out = proc.communicate(timeout=RUN_TIMEOUT_S)[0]

    assert "1 failed" in out, out[-3000:]
    assert "ends by itself" not in out and "cli sweep" not in out and "hermes-kernel sweep" not in out, out[-3000:]
    assert "(shut down at session end: it cannot outlive it: " in out and "init" in out, out[-3000:]
    records = sorted(p.name for p in (tmp / f"pytest-hermes-kernel-{os.getuid()}" / "kept").glob("*.json"))
    assert records == [], f"records of kernels gone with the run's pid namespace: {records}"
