"""A run whose pytest is the first process of its pid namespace (a CI job's container running
``pytest`` as its command, ``unshare --pid --fork``) takes every process of that namespace with it
when it exits: the kernel kernel server forked for a local test's kernel too. Under
``--hermes-keep-failed`` its summary still said ``kept for post-mortem: ...: kernel ID on local
...; it ends by itself 3600 s after its last client leaves`` with the ``hermes-kernel exec`` line,
and left a record: ``hermes-kernel ls`` then listed the kernel as not alive, and ``exec`` said
``the kept local kernel runner 4 is gone``, exit status 2. Such a kernel is kept until the session
ends now, as a filecell one is, and the summary says why; a docker kernel is still kept past it."""

from __future__ import annotations

import os
from pathlib import Path

from tests.namespaced import pytest_command, start, unshare
from tests.support import RUN_TIMEOUT_S

FAILING = """
def test_load(hermes_kernel):
    hermes_kernel.execute("rows = [3, 1, 2]; total = sum(rows) + 1")
    assert hermes_kernel.execute("total").value == "6"
"""


def test_a_local_kernel_of_a_pid_namespaces_init_is_not_promised_past_the_run(tmp_path: Path) -> None:
    unshare()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    (tmp_path / "test_postmortem.py").write_text(FAILING)

    proc = start(tmp_path, pytest_command("--hermes-keep-failed", "test_postmortem.py"), TMPDIR=str(tmp))
    out = proc.communicate(timeout=RUN_TIMEOUT_S)[0]

    assert "1 failed" in out, out[-3000:]
    assert "ends by itself" not in out and "hermes-kernel exec" not in out, out[-3000:]
    assert "(shut down at session end: it cannot outlive it: " in out, out[-3000:]
    assert "pid namespace" in out, out[-3000:]
    records = sorted(p.name for p in (tmp / f"pytest-hermes-kernel-{os.getuid()}" / "kept").glob("*.json"))
    assert records == [], f"records of kernels gone with the run's pid namespace: {records}"
