"""Seen (a breaker helper on neighbours, 2026-12-06): two runs, each in a pid namespace of its own
(``unshare --pid``, a CI job's container) sharing one temp dir, are both pid 1 there, so their
local kernel dirs are both named ``hermes-kernel-1-*``. The leak check after a test of one run
took a dir the other run made during that test for its own: ``LeakError ... leaked kernel dir:
/tmp/hermes-kernel-1-...`` (the test errored under ``--hermes-leak-check=error``) and removed the
other run's live kernel's dir. A dir's host file names the pid namespace it was made in; the
probe now leaves another namespace's dirs to their own run."""

from __future__ import annotations

import os
from pathlib import Path

from tests import namespaced

INNER = namespaced.WAIT_FOR + """
ROLE = os.environ["KB_ROLE"]


def test_a_kernel_beside_the_other_namespace(hermes_kernel):
    if ROLE == "b":
        wait_for("a-up.json")  # b's kernel (and its dir) comes during a's test
    assert hermes_kernel.execute("x = 41").status == "ok"
    (OUT / f"{ROLE}-up.json").write_text(json.dumps({"pid": os.getpid(), "dir": hermes_kernel.launched.kernel_dir}))
    wait_for("b-up.json" if ROLE == "a" else "go")
    assert hermes_kernel.execute("x + 1").value == "42"
"""


def test_a_leak_check_leaves_a_kernel_dir_of_the_same_pid_in_another_namespace_alone(tmp_path: Path) -> None:
    out = namespaced.prepare(tmp_path, INNER)
    command = namespaced.pytest_command("--hermes-transport=local")
    runs = {role: namespaced.start(tmp_path, command, KB_OUT=str(out), KB_ROLE=role) for role in "ab"}
    try:
        b_up = namespaced.wait_for(runs["b"], out / "b-up.json")
        a_output = runs["a"].communicate(timeout=120)[0]
        a_up = namespaced.wait_for(runs["a"], out / "a-up.json")
        assert a_up["pid"] == b_up["pid"] == 1  # the same pid, in two namespaces
        assert runs["a"].returncode == 0 and "1 passed" in a_output and "leak" not in a_output, a_output[-3000:]
        assert os.path.isdir(b_up["dir"])  # b's kernel's dir, still there for b
        b_output = namespaced.finish(runs["b"], out / "go")
    finally:
        namespaced.stop(runs.values(), out / "go")
    assert runs["b"].returncode == 0 and "1 passed" in b_output, b_output[-3000:]
    assert not os.path.exists(b_up["dir"]) and not os.path.exists(a_up["dir"])


def test_the_stale_sweep_takes_a_kernel_dir_of_pid_1_once_its_namespace_ended(tmp_path: Path) -> None:
    """A killed namespaced run's dirs are named ``hermes-kernel-1-*``, and pid 1 always lives here:
    the stale-dir sweep (the registry's reaper, ``hermes-kernel sweep kernel-dirs``) judged that pid
    here and kept the dir until it was stale (a week, STALE_DIR_AGE_S) after its namespace had ended.
    Once no process is in that namespace, its host is dead."""
    import subprocess

    from pytest_hermes_kernel.transports.kernel_dirs import HOST_FILE, stale_kernel_dirs

    ended = namespaced.ended_namespace()
    live = os.readlink("/proc/self/ns/pid")
    for name, namespace in (("hermes-kernel-1-ended", ended), ("hermes-kernel-1-here", live)):
        (tmp_path / name).mkdir(mode=0o700)
        (tmp_path / name / HOST_FILE).write_text(f"1 {namespace}\n{tmp_path}\n")

    stale = stale_kernel_dirs(3600.0, str(tmp_path))

    assert stale == [str(tmp_path / "hermes-kernel-1-ended")]  # (pid 1 of this namespace lives)
