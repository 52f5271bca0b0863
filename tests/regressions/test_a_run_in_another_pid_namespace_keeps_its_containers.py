"""Seen (a breaker helper on neighbours, 2026-12-06): two runs on one docker engine and one
hostname, one of them in a pid namespace of its own (a CI job in a container with the host's
network, or under ``unshare --pid``: same hostname, same ``/tmp``, pytest is pid 1 there). The
other run's session-start sweep judged the first run's live kernel host container by its host
pid label and its shared state file's members, pids of that namespace read in its own: pid 1
here is init, started at boot, so the run counted as gone. The sweep removed the container mid-test
(the next cell: ``status='died'``, ``transport_lost ... container stopped``) and the run's state
file with it; ``hermes-kernel sweep --reused`` likewise took a ``--hermes-reuse`` container such a
run had claimed. The labels and the state file now name the process table their pids are of
(boot id and pid namespace): another live namespace's are not judged from here, and once that
namespace has ended (the run SIGKILLed with its container), what it left goes at the next sweep."""

from __future__ import annotations

import os
import tempfile
import uuid
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers.labels import LABEL_STATE_FILE
from pytest_hermes_kernel.containers.sweep import sweep_dead_run_files, sweep_dead_runs
from pytest_hermes_kernel.procs import pid_alive
from tests import namespaced
from tests.support import run_containers, wait_until

INNER = namespaced.WAIT_FOR + """
import docker


def test_a_kernel_held_while_a_neighbour_sweeps(hermes_kernel, hermes_transport):
    assert hermes_kernel.execute("x = 41").status == "ok"
    client = docker.from_env()
    labels = client.containers.get(hermes_transport.container_id).labels
    client.close()
    (OUT / "up.json").write_text(json.dumps({"container": hermes_transport.container_id, "labels": labels,
                                             "pid": os.getpid(), "ns": os.readlink("/proc/self/ns/pid")}))
    wait_for("go")
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


def _remove(container_id: str) -> None:
    import docker

    client = docker.from_env()
    try:
        client.containers.get(container_id).remove(force=True)
    except docker.errors.NotFound:
        pass
    finally:
        client.close()


@pytest.mark.parametrize("reuse", [False, True], ids=["shared", "reused"])
def test_a_neighbours_sweep_leaves_a_live_run_of_another_pid_namespace_alone(
        tmp_path: Path, docker_ready: None, monkeypatch: pytest.MonkeyPatch, reuse: bool) -> None:
    out = namespaced.prepare(tmp_path, INNER)
    run_id = f"pidns-{uuid.uuid4().hex}"
    env = {"KB_OUT": str(out)}
    if reuse:  # a temp dir (and reuse store) of its own: `sweep --reused` takes no one else's parked container
        (tmp_path / "tmp").mkdir()
        env["TMPDIR"] = str(tmp_path / "tmp")
    command = namespaced.pytest_command("--hermes-transport=docker", "--hermes-require-transports",
                                        f"--hermes-run-id={run_id}", *(["--hermes-reuse"] if reuse else []))
    proc = namespaced.start(tmp_path, command, **env)
    up: dict[str, object] = {}
    try:
        up = namespaced.wait_for(proc, out / "up.json")
        assert up["pid"] == 1  # pytest is its namespace's first process: pid 1 here is init
        if reuse:  # `hermes-kernel sweep --reused` run with that run's TMPDIR
            monkeypatch.setattr(tempfile, "tempdir", env["TMPDIR"])
            removed = sweep_dead_runs(reused=True)
            monkeypatch.undo()
            files: list[str] = []
        else:  # what the first docker use of any session beside it runs (and `hermes-kernel sweep`'s two kinds)
            removed, files = sweep_dead_runs(), sweep_dead_run_files()
        assert up["container"] not in removed and _container_running(str(up["container"]))
        state_file = str(up["labels"][LABEL_STATE_FILE])  # type: ignore[index]
        assert os.path.exists(state_file) and state_file not in files, files
        output = namespaced.finish(proc, out / "go")
    finally:
        namespaced.stop([proc], out / "go")
        if up and reuse:  # parked for reuse when the run ended: this test's to remove
            _remove(str(up["container"]))
    assert proc.returncode == 0 and "1 passed" in output, output[-3000:]
    if not reuse:
        assert run_containers(run_id) == []


def _in_namespace(namespace: str) -> list[str]:
    found = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and os.readlink(f"/proc/{name}/ns/pid") == namespace and pid_alive(int(name)):
                found.append(name)
        except OSError:
            continue
    return found


def test_what_a_killed_run_of_another_pid_namespace_left_goes_at_the_next_sweep(tmp_path: Path,
                                                                                docker_ready: None) -> None:
    out = namespaced.prepare(tmp_path, INNER)
    run_id = f"pidns-{uuid.uuid4().hex}"
    command = namespaced.pytest_command("--hermes-transport=docker", "--hermes-require-transports",
                                        f"--hermes-run-id={run_id}")
    proc = namespaced.start(tmp_path, command, KB_OUT=str(out))
    try:
        up = namespaced.wait_for(proc, out / "up.json")
    finally:
        proc.kill()  # SIGKILL: its namespace ends with unshare's child, and every process in there
        proc.communicate()
    wait_until(lambda: not _in_namespace(up["ns"]), 10.0, what="the killed run's namespace to end")
    state_file = up["labels"][LABEL_STATE_FILE]

    # a later session's start-up sweep (its run files go with it); another xdist worker's test may
    # sweep first (a pytester run's session start: the run is dead for it too, and a CI run saw its
    # 409 "removal already in progress" here), so what is asserted is that they are gone after it
    removed = sweep_dead_runs()
    sweep_dead_run_files()
    assert run_containers(run_id) == [], f"a sweep left the killed run's container (this one removed {removed})"
    assert not os.path.exists(state_file)
