"""A script that uses the public API and ends normally leaves nothing behind (issue #9 point 8);
one ended by SIGTERM leaves its container to a sweep, or nothing when it makes SIGTERM an exit.

Before: ``start_kernel("docker")`` / ``start_kernel("ssh")`` in a plain script (no pytest, no
``close()``) left its kernel host or sshd container running and its member lists, lock files
and the generated ssh private key in the temp dir, until some later run's sweep. Now the first
shared transport registers an exit hook that shuts the process's kernels down and then leaves
the shared containers (the last member removes the container and the run's files).

Each script runs in a subprocess with its own ``TMPDIR``, so every file it makes is seen here;
it prints its run id, which labels its containers and names its run dir.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import run_containers

WITH_BLOCK = """
import sys
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.containers.sharing import current_run_id

with start_kernel(sys.argv[1], timeout=30) as k:
    r = k.execute("import csv; rows = [1, 2, 3]")
    r = k.execute("sum(rows)")
    assert r.status == "ok" and r.value == "6", r
print(current_run_id())
"""

# the README's registry example, on this transport, never closed: the exit hook must end the
# registry's kernels before it closes their transport (else a kernel's shutdown joins it again)
REGISTRY_LEFT_OPEN = """
import sys
from pytest_hermes_kernel import KernelKey, KernelRegistry
from pytest_hermes_kernel.containers.sharing import current_run_id

reg = KernelRegistry(max_kernels=4, idle_timeout=1800.0)
r = reg.execute(KernelKey(owner="conv-a", transport=sys.argv[1]), "x = 1")
assert r.status == "ok", r
print(current_run_id())
"""


def _containers_of_run(run_id: str) -> list[str]:
    return [c["Id"] for c in run_containers(run_id)]


def _remove(container_ids: list[str]) -> None:
    from pytest_hermes_kernel.containers.lifecycle import remove_container

    for cid in container_ids:
        remove_container(cid)


def _run_script(script: str, transport: str, tmpdir: Path) -> str:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    env.pop("PYTEST_HERMES_RUN_ID", None)  # a run of its own, as a user's script has
    env.pop("PYTEST_XDIST_TESTRUNUID", None)
    proc = subprocess.run([sys.executable, "-c", script, transport], env=env, capture_output=True, text=True,
                          timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr, proc.stderr
    return proc.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("script", [WITH_BLOCK, REGISTRY_LEFT_OPEN], ids=["with-block", "registry-left-open"])
@pytest.mark.parametrize("transport", ["docker", "ssh"])
def test_a_script_leaves_no_container_run_file_or_key(docker_ready: None, tmp_path: Path, transport: str,
                                                       script: str) -> None:
    run_id = _run_script(script, transport, tmp_path)
    left = _containers_of_run(run_id)
    try:
        assert left == [], f"the script's {transport} container outlived it"
        files = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
        assert [f for f in files if run_id in f or f.endswith(".key")] == [], "run files or a key outlived the run"
        assert not list(tmp_path.rglob(f"run-{run_id}")), "the run dir outlived the run"
        assert [f for f in files if "pytest-hermes-kernel" in f] in ([], [f"pytest-hermes-kernel-{os.getuid()}/image.lock"])
    finally:
        _remove(left)


# a script that waits until it is ended by SIGTERM; with "exit", it makes SIGTERM an exit as the
# README says (the package installs no signal handler in a user's process)
UNTIL_SIGTERM = """
import signal, sys, time
if sys.argv[2] == "exit":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.containers.sharing import current_run_id

k = start_kernel(sys.argv[1])
assert k.execute("x = 1").status == "ok"
print(current_run_id(), flush=True)
time.sleep(600)
"""


def _sigtermed_script(transport: str, tmpdir: Path, how: str) -> tuple[str, int]:
    """Run :data:`UNTIL_SIGTERM`, SIGTERM it once its kernel runs: ``(run id, exit status)``."""
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    env.pop("PYTEST_HERMES_RUN_ID", None)
    env.pop("PYTEST_XDIST_TESTRUNUID", None)
    proc = subprocess.Popen([sys.executable, "-c", UNTIL_SIGTERM, transport, how], env=env, stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        run_id = proc.stdout.readline().strip()
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()
    assert run_id, f"the script ended ({code}) before its kernel ran"
    return run_id, code


def _run_files(tmpdir: Path, run_id: str) -> list[str]:
    return [str(p) for p in tmpdir.rglob("*") if run_id in str(p) or p.name.endswith(".key")]


@pytest.mark.parametrize("transport", ["docker", "ssh"])
def test_a_script_that_makes_sigterm_an_exit_leaves_nothing(docker_ready: None, tmp_path: Path,
                                                            transport: str) -> None:
    run_id, code = _sigtermed_script(transport, tmp_path, "exit")
    left = _containers_of_run(run_id)
    try:
        assert code == 128 + signal.SIGTERM
        assert left == [], f"the script's {transport} container outlived it"
        assert _run_files(tmp_path, run_id) == [], "run files or a key outlived the script"
    finally:
        _remove(left)


@pytest.mark.parametrize("transport", ["docker", "ssh"])
def test_what_a_script_ended_by_sigterm_left_is_removed_by_hermes_kernel_sweep(docker_ready: None, tmp_path: Path,
                                                                              transport: str) -> None:
    run_id, code = _sigtermed_script(transport, tmp_path, "default")
    assert code == -signal.SIGTERM  # no exit hook ran: its container and run files stay for a sweep
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    swept = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep"], env=env, capture_output=True,
                           text=True, timeout=120)
    left = _containers_of_run(run_id)
    try:
        assert swept.returncode == 0, swept.stderr
        assert left == [], f"the sweep left the script's {transport} container: {swept.stdout}"
        assert _run_files(tmp_path, run_id) == [], f"the sweep left run files or a key: {swept.stdout}"
    finally:
        _remove(left)
