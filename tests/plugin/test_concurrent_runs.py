"""Handed case B39: two sessions sharing one docker engine and one machine (same TMPDIR, same
HOME) collided on container names built from a pid, directories keyed on the xdist worker id
(both sessions have ``gw0``) and machine-global locks, or cleaned up each other's resources.

Two ``pytest -n 2`` runs at once, each on local, docker and ssh. Each run's first test waits
until the other run is up too (so both live at the same time, and each one's session-start
sweep and leak checks run while the other's containers are in use), sweeps dead runs by hand,
and records what it used. Then: both runs pass (no 409, no lock error, no leak), each run has a
random run id (not a pid or worker id) that labels every container it made, their containers,
sshd ports, kernel dirs and run dirs are disjoint, and nothing of either is left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.labels import LABEL_RUN_ID
from pytest_hermes_kernel.containers.rundir import run_dir_path
from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS, run_containers

pytest.importorskip("xdist")

INNER = """
import json, os, pathlib, time

from pytest_hermes_kernel.containers.sharing import current_run_id, worker_id
from pytest_hermes_kernel.containers.sweep import sweep_dead_runs

OUT = pathlib.Path(os.environ["B39_OUT"])
ME, OTHER = os.environ["B39_ME"], os.environ["B39_OTHER"]


def wait_for_the_other_run(timeout=90.0):
    deadline = time.monotonic() + timeout
    while not list(OUT.glob(f"{OTHER}-*.json")):
        assert time.monotonic() < deadline, "the other run never started a kernel"
        time.sleep(0.05)


def container_facts(transport):
    import docker
    cid = transport.container_id if transport.name == "docker" else transport.sshd_container_id
    client = docker.from_env()
    try:
        labels = client.containers.get(cid).labels
    finally:
        client.close()
    port = transport.sshd.record["port"] if transport.name == "ssh" else None
    return {"container": cid, "labels": labels, "port": port}


def test_side_by_side(hermes_kernel, hermes_transport):
    assert hermes_kernel.execute("1 + 1").value == "2"
    facts = {"run_id": current_run_id(), "pid": os.getpid(), "worker": worker_id(),
             "transport": hermes_transport.name, "kernel_dir": hermes_kernel.launched.kernel_dir}
    if hermes_transport.name in ("docker", "ssh"):
        facts.update(container_facts(hermes_transport))
    (OUT / f"{ME}-{hermes_transport.name}.json").write_text(json.dumps(facts))
    wait_for_the_other_run()
    sweep_dead_runs(keep_run_id=current_run_id())  # a session-start sweep, now that both live
    assert hermes_kernel.execute("2 + 2").value == "4"
"""

def _start(directory: Path, me: str, other: str, out: Path) -> subprocess.Popen[str]:
    env = dict(os.environ, B39_OUT=str(out), B39_ME=me, B39_OTHER=other)
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-n", "2", "-q",
            "--hermes-transport=local,docker,ssh", "--hermes-require-transports", "--hermes-leak-check=error"]
    return subprocess.Popen(args, cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _labelled(run_id: str) -> list[str]:
    return [c["Id"] for c in run_containers(run_id)]


def test_two_runs_at_once_never_touch_each_other(pytester: pytest.Pytester, docker_ready: None) -> None:
    out = pytester.mkdir("facts")
    procs = {}
    for me, other in (("a", "b"), ("b", "a")):
        directory = pytester.mkdir(me)
        (directory / "test_side.py").write_text(INNER)
        procs[me] = _start(directory, me, other, out)
    outputs = {me: proc.communicate(timeout=RUN_TIMEOUT_S * 2)[0] for me, proc in procs.items()}
    for me, proc in procs.items():
        assert proc.returncode == 0, f"run {me}:\n{outputs[me][-3000:]}"
        assert "3 passed" in outputs[me], outputs[me][-2000:]

    facts = [json.loads(p.read_text()) for p in sorted(out.glob("*.json"))]
    runs = {me: [f for f, p in zip(facts, sorted(out.glob("*.json"))) if p.name.startswith(me)] for me in "ab"}
    ids = {me: {f["run_id"] for f in runs[me]} for me in "ab"}
    assert all(len(v) == 1 for v in ids.values()) and ids["a"] != ids["b"], ids  # one id a run, each its own
    for me in "ab":
        (run_id,) = ids[me]
        assert len(run_id) >= 32 and not any(str(f["pid"]) in run_id or f["worker"] in run_id for f in runs[me])
        for f in runs[me]:
            if "labels" in f:
                assert f["labels"][LABEL_RUN_ID] == run_id
        assert _labelled(run_id) == [], f"run {me} left containers"
        assert not os.path.exists(run_dir_path(run_id)), f"run {me} left its run dir"
    for key in ("container", "port", "kernel_dir"):
        mine = {me: {f.get(key) for f in runs[me]} - {None} for me in "ab"}
        assert not mine["a"] & mine["b"], f"both runs used the same {key}: {mine['a'] & mine['b']}"
    assert {f["worker"] for f in runs["a"]} & {f["worker"] for f in runs["b"]}  # the same worker ids in both
