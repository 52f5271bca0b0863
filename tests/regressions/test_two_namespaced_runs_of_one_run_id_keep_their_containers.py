"""Seen (a breaker helper on neighbours, 2026-12-06): two CI jobs on one docker engine, each in a
pid and mount namespace of its own (a job's container with the host's network: the same hostname,
its own ``/tmp``), pytest pid 1 in both, and one ``--hermes-run-id`` (``PYTEST_HERMES_RUN_ID`` from
the pipeline). The leak check after a test of one run lists the containers of its run id made by
its own host pid: the other run's container, made during that test, had both, and its state file
was out of sight, so the check reported ``leaked container: container ... (docker-kernel-host,
running); no live process holds it`` and removed it (the other run's next cell: ``status='died'``).
A container whose process-table label names another pid namespace is not this process's."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, run_containers

INNER = """
import json, os, pathlib, time

OUT = pathlib.Path(os.environ["KB_OUT"])
ROLE = os.environ["KB_ROLE"]


def wait_for(name):
    deadline = time.monotonic() + 120
    while not (OUT / name).exists():
        assert time.monotonic() < deadline, f"never saw {name}"
        time.sleep(0.05)


def test_a_kernel_beside_the_other_job(hermes_kernel):
    if ROLE == "b":
        wait_for("a-up")  # b's container comes during a's test
    assert hermes_kernel.execute("x = 41").status == "ok"
    (OUT / f"{ROLE}-up").write_text(json.dumps({"pid": os.getpid()}))
    wait_for("b-up" if ROLE == "a" else "go")
    assert hermes_kernel.execute("x + 1").value == "42"
"""


def _start(unshare: str, directory: Path, out: Path, role: str, run_id: str) -> subprocess.Popen[str]:
    tmp = directory / f"tmp-{role}"
    tmp.mkdir()
    pytest_args = shlex.join([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *UNRELATED_PLUGINS,
                              "-p", "no:xdist", "-q", "--hermes-transport=docker", "--hermes-require-transports",
                              "--hermes-leak-check=error", f"--hermes-run-id={run_id}"])
    script = f"mount -t tmpfs tmpfs {shlex.quote(str(tmp))} && exec {pytest_args}"  # a /tmp of its own
    args = [unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "--mount", "--propagation", "private",
            "sh", "-c", script]
    return subprocess.Popen(args, cwd=directory, env=dict(os.environ, KB_OUT=str(out), KB_ROLE=role, TMPDIR=str(tmp)),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def test_one_jobs_leak_check_leaves_the_other_jobs_container_alone(tmp_path: Path, docker_ready: None) -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare, to start runs in pid and mount namespaces of their own")
    (tmp_path / "test_inner.py").write_text(INNER)
    out = tmp_path / "out"
    out.mkdir()
    run_id = f"job-{uuid.uuid4().hex}"
    runs = {role: _start(unshare, tmp_path, out, role, run_id) for role in "ab"}
    try:
        a_output = runs["a"].communicate(timeout=RUN_TIMEOUT_S)[0]
        assert runs["a"].returncode == 0 and "1 passed" in a_output and "leak" not in a_output, a_output[-3000:]
        (out / "go").write_text("")
        b_output = runs["b"].communicate(timeout=RUN_TIMEOUT_S)[0]
    finally:
        (out / "go").write_text("")
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    assert runs["b"].returncode == 0 and "1 passed" in b_output, b_output[-3000:]
    assert run_containers(run_id) == []
