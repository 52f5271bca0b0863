"""Seen (a breaker helper on neighbours, 2026-12-06): two runs, each in a pid namespace of its own
(``unshare --pid``, a CI job's container) sharing one temp dir, are both pid 1 there, so their
local kernel dirs are both named ``hermes-kernel-1-*``. The leak check after a test of one run
took a dir the other run made during that test for its own: ``LeakError ... leaked kernel dir:
/tmp/hermes-kernel-1-...`` (the test errored under ``--hermes-leak-check=error``) and removed the
other run's live kernel's dir. A dir's host file names the pid namespace it was made in; the
probe now leaves another namespace's dirs to their own run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS

INNER = """
import json, os, pathlib, time

OUT = pathlib.Path(os.environ["KB_OUT"])
ROLE = os.environ["KB_ROLE"]


def wait_for(name):
    deadline = time.monotonic() + 120
    while not (OUT / name).exists():
        assert time.monotonic() < deadline, f"never saw {name}"
        time.sleep(0.05)


def test_a_kernel_beside_the_other_namespace(hermes_kernel):
    if ROLE == "b":
        wait_for("a-up")  # b's kernel (and its dir) comes during a's test
    assert hermes_kernel.execute("x = 41").status == "ok"
    (OUT / f"{ROLE}-up").write_text(json.dumps({"pid": os.getpid(), "dir": hermes_kernel.launched.kernel_dir}))
    wait_for("b-up" if ROLE == "a" else "go")
    assert hermes_kernel.execute("x + 1").value == "42"
"""


def _start(unshare: str, directory: Path, out: Path, role: str) -> subprocess.Popen[str]:
    args = [unshare, "--pid", "--fork", "--mount-proc", sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
            *UNRELATED_PLUGINS, "-p", "no:xdist", "-q", "--hermes-transport=local", "--hermes-leak-check=error"]
    return subprocess.Popen(args, cwd=directory, env=dict(os.environ, KB_OUT=str(out), KB_ROLE=role),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_a_leak_check_leaves_a_kernel_dir_of_the_same_pid_in_another_namespace_alone(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare, to start runs in pid namespaces of their own")
    (tmp_path / "test_inner.py").write_text(INNER)
    out = tmp_path / "out"
    out.mkdir()
    runs = {role: _start(unshare, tmp_path, out, role) for role in "ab"}
    try:
        a_output = runs["a"].communicate(timeout=RUN_TIMEOUT_S)[0]
        b_up = json.loads((out / "b-up").read_text())
        a_up = json.loads((out / "a-up").read_text())
        assert a_up["pid"] == b_up["pid"] == 1  # the same pid, in two namespaces
        assert runs["a"].returncode == 0 and "1 passed" in a_output and "leak" not in a_output, a_output[-3000:]
        assert os.path.isdir(b_up["dir"])  # b's kernel's dir, still there for b
        (out / "go").write_text("")
        b_output = runs["b"].communicate(timeout=RUN_TIMEOUT_S)[0]
    finally:
        (out / "go").write_text("")
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert runs["b"].returncode == 0 and "1 passed" in b_output, b_output[-3000:]
    assert not os.path.exists(b_up["dir"]) and not os.path.exists(a_up["dir"])
