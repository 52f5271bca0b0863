"""Seen (a breaker helper on neighbours, 2026-12-06): two runs on one docker engine and one
hostname, one of them in a pid namespace of its own (a CI job in a container with the host's
network, or under ``unshare --pid``: same hostname, same ``/tmp``, pytest is pid 1 there). The
other run's session-start sweep judged the first run's live kernel host container by its host
pid label and its shared state file's members, pids of that namespace read in its own: pid 1
here is init, started at boot, so the run counted as gone. The sweep removed the container mid-test
(the next cell: ``status='died'``, ``transport_lost ... container stopped``) and the run's state
file with it. The labels and the state file now name the process table their pids are of
(boot id and pid namespace): another namespace's are not judged from here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.labels import LABEL_STATE_FILE
from pytest_hermes_kernel.containers.sweep import sweep_dead_run_files, sweep_dead_runs
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, run_containers

INNER = """
import json, os, pathlib, time

import docker

OUT = pathlib.Path(os.environ["KB_OUT"])


def test_a_kernel_held_while_a_neighbour_sweeps(hermes_kernel, hermes_transport):
    assert hermes_kernel.execute("x = 41").status == "ok"
    client = docker.from_env()
    labels = client.containers.get(hermes_transport.container_id).labels
    client.close()
    (OUT / "up.json").write_text(json.dumps({"container": hermes_transport.container_id, "labels": labels,
                                             "pid": os.getpid()}))
    deadline = time.monotonic() + 120
    while not (OUT / "go").exists():
        assert time.monotonic() < deadline, "the outer test never said go"
        time.sleep(0.05)
    result = hermes_kernel.execute("x + 1")
    assert result.value == "42", result
"""


def _container_running(container_id: str) -> bool:
    import docker

    client = docker.from_env()
    try:
        return bool(client.containers.get(container_id).attrs["State"]["Running"])
    except docker.errors.NotFound:
        return False
    finally:
        client.close()


def test_a_neighbours_sweep_leaves_a_live_run_of_another_pid_namespace_alone(tmp_path: Path,
                                                                              docker_ready: None) -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare, to start a run in a pid namespace of its own")
    (tmp_path / "test_inner.py").write_text(INNER)
    out = tmp_path / "out"
    out.mkdir()
    run_id = f"pidns-{uuid.uuid4().hex}"
    args = [unshare, "--pid", "--fork", "--mount-proc", sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
            *UNRELATED_PLUGINS, "-p", "no:xdist", "-q", "--hermes-transport=docker", "--hermes-require-transports",
            "--hermes-leak-check=error", f"--hermes-run-id={run_id}"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=dict(os.environ, KB_OUT=str(out)), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (out / "up.json").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the inner run never held its kernel:\n{proc.communicate()[0][-3000:]}")
            time.sleep(0.05)
        up = json.loads((out / "up.json").read_text())
        assert up["pid"] == 1  # pytest is its namespace's first process: pid 1 here is init
        state_file = up["labels"][LABEL_STATE_FILE]
        assert os.path.exists(state_file)

        # what the first docker use of any session beside it runs (and `hermes-kernel sweep`'s two kinds)
        removed = sweep_dead_runs()
        files = sweep_dead_run_files()
        assert up["container"] not in removed and _container_running(up["container"])
        assert os.path.exists(state_file) and state_file not in files, files

        (out / "go").write_text("")
        output = proc.communicate(timeout=RUN_TIMEOUT_S)[0]
    finally:
        (out / "go").write_text("")
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "1 passed" in output, output[-3000:]
    assert run_containers(run_id) == []


def test_sweep_reused_leaves_a_container_a_run_of_another_pid_namespace_claimed(
        tmp_path: Path, docker_ready: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run with ``--hermes-reuse``: its container's claim names a member of that namespace
    (pid 1), and `hermes-kernel sweep --reused` (every unclaimed container of the store) took it."""
    import tempfile

    import docker

    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare, to start a run in a pid namespace of its own")
    (tmp_path / "test_inner.py").write_text(INNER)
    out, tmp = tmp_path / "out", tmp_path / "tmp"  # a temp dir (and reuse store) of its own: no one else's parked
    out.mkdir()
    tmp.mkdir()
    args = [unshare, "--pid", "--fork", "--mount-proc", sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
            *UNRELATED_PLUGINS, "-p", "no:xdist", "-q", "--hermes-transport=docker", "--hermes-require-transports",
            "--hermes-leak-check=error", "--hermes-reuse"]
    proc = subprocess.Popen(args, cwd=tmp_path, env=dict(os.environ, KB_OUT=str(out), TMPDIR=str(tmp)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    up: dict[str, object] = {}
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (out / "up.json").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the inner run never held its kernel:\n{proc.communicate()[0][-3000:]}")
            time.sleep(0.05)
        up = json.loads((out / "up.json").read_text())
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))  # `sweep --reused` run with that run's TMPDIR
        removed = sweep_dead_runs(reused=True)
        monkeypatch.undo()
        assert up["container"] not in removed and _container_running(str(up["container"]))
        (out / "go").write_text("")
        output = proc.communicate(timeout=RUN_TIMEOUT_S)[0]
    finally:
        (out / "go").write_text("")
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        if up:  # parked for reuse when the run ended: this test's to remove
            client = docker.from_env()
            try:
                client.containers.get(str(up["container"])).remove(force=True)
            except docker.errors.NotFound:
                pass
            finally:
                client.close()
    assert proc.returncode == 0 and "1 passed" in output, output[-3000:]
