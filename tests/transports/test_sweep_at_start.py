"""A session's first docker use sweeps containers of dead runs, and never its own run's."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from pytest_hermes_kernel.cli import doctor

pytestmark = pytest.mark.skipif(not doctor(["docker"])[0].ok, reason="needs a docker engine")

SCRIPT = """
from pytest_hermes_kernel.transports import make_transport
make_transport("docker", run_id="live-run").close()
"""


def _labelled(run_id: str) -> str:
    import docker

    client = docker.from_env()
    c = client.containers.run("hermes-kernel-host:latest", detach=True, network_mode="none", labels={
        "org.hermes-kernel": "1", "org.hermes-kernel.host-pid": "999999", "org.hermes-kernel.host-start": "1",
        "org.hermes-kernel.hostname": socket.gethostname(), "org.hermes-kernel.run-id": run_id})
    return c.id


def _exists(cid: str) -> bool:
    import docker

    try:
        docker.from_env().containers.get(cid)
        return True
    except docker.errors.NotFound:
        return False


def test_dead_runs_are_swept_at_a_sessions_first_docker_use() -> None:
    import docker

    dead = _labelled("dead-run")
    try:
        subprocess.run([sys.executable, "-c", SCRIPT], check=True, timeout=120)
        assert not _exists(dead), "a container of a dead run must be swept at session start"
    finally:
        try:
            docker.from_env().containers.get(dead).remove(force=True)
        except docker.errors.NotFound:
            pass


def test_the_current_runs_containers_are_never_swept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its creator may have exited while another xdist worker of the run still uses it (B21)."""
    from pytest_hermes_kernel.containers import sweep as containers

    dead_host = {"org.hermes-kernel": "1", "org.hermes-kernel.host-pid": "999999",
                 "org.hermes-kernel.host-start": "1", "org.hermes-kernel.hostname": socket.gethostname()}

    class FakeApi:
        def containers(self, all: bool, filters: dict) -> list[dict]:  # noqa: A002 - docker-py's name
            return [{"Id": "mine", "Labels": {**dead_host, "org.hermes-kernel.run-id": "live-run"}},
                    {"Id": "theirs", "Labels": {**dead_host, "org.hermes-kernel.run-id": "dead-run"}}]

    class FakeClient:
        api = FakeApi()

    removed: list[str] = []
    monkeypatch.setattr(containers, "remove_container", lambda cid, client: removed.append(cid) or True)
    assert containers.sweep_dead_runs(FakeClient(), keep_run_id="live-run") == ["theirs"]
    assert removed == ["theirs"]
