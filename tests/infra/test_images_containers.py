"""The kernel host image and its containers: loopback-only sshd, key-only login, no network,
memory limit with a readable OOM counter, and the sweep of containers left by dead hosts.

Docker tests skip (with the reason from ``docker_status()``) where no engine is reachable.
Every container started here is removed by id in a finalizer.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_hermes_kernel.containers import base_image, images
from pytest_hermes_kernel.containers import keys, labels, sweep
from pytest_hermes_kernel.containers import lifecycle as containers
from pytest_hermes_kernel.procs import start_time

if TYPE_CHECKING:
    import docker

MIB = 1 << 20


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    ok, why = images.docker_status()
    if not ok:
        pytest.skip(f"docker not reachable: {why}")
    import docker

    client = docker.from_env()
    yield client
    client.close()


@pytest.fixture(scope="session")
def kernel_image(docker_client: docker.DockerClient) -> str:
    return images.ensure_image(docker_client, progress=lambda line: None)


@pytest.fixture
def run_id() -> str:
    return f"test-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def keypair() -> tuple[str, str]:
    return keys.generate_keypair()


@pytest.fixture
def sshd(
    kernel_image: str, run_id: str, keypair: tuple[str, str], docker_client: docker.DockerClient
) -> Iterator[containers.SshdEndpoint]:
    endpoint = containers.start_sshd(
        image=kernel_image, run_id=run_id, worker_id="test", authorized_key=keypair[1]
    )
    yield endpoint
    containers.remove_container(endpoint.container_id, client=docker_client)


@pytest.fixture
def kernel_host(
    kernel_image: str, run_id: str, docker_client: docker.DockerClient
) -> Iterator[Any]:
    container = containers.start_kernel_host(
        image=kernel_image, run_id=run_id, worker_id="test", mem_limit_bytes=256 * MIB
    )
    yield container
    containers.remove_container(container.id, client=docker_client)


def _ssh_connect(endpoint: containers.SshdEndpoint, **auth: Any) -> Any:
    import paramiko

    client = paramiko.SSHClient()
    client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
    client.connect(
        endpoint.host, endpoint.port, username=endpoint.user, timeout=10,
        allow_agent=False, look_for_keys=False, **auth,
    )
    return client


def test_sshd_port_is_published_on_loopback_only(
    sshd: containers.SshdEndpoint, docker_client: docker.DockerClient
) -> None:
    assert sshd.host == "127.0.0.1"
    assert isinstance(sshd.port, int) and sshd.port > 0
    ports = docker_client.containers.get(sshd.container_id).attrs["NetworkSettings"]["Ports"]
    bindings = [b for published in ports.values() if published for b in published]
    assert bindings == [{"HostIp": "127.0.0.1", "HostPort": str(sshd.port)}]


def test_sshd_banner_is_readable_on_loopback(sshd: containers.SshdEndpoint) -> None:
    with socket.create_connection((sshd.host, sshd.port), timeout=5) as sock:
        assert sock.recv(64).startswith(b"SSH-2.0-")


def test_key_login_as_hermes_runs_python(
    sshd: containers.SshdEndpoint, keypair: tuple[str, str]
) -> None:
    client = _ssh_connect(sshd, pkey=keys.load_private_key(keypair[0]))
    try:
        _, stdout, _ = client.exec_command("python3 -c 'print(1)'; id -un")
        assert stdout.read().decode().split() == ["1", "hermes"]
        assert stdout.channel.recv_exit_status() == 0
    finally:
        client.close()


def test_only_publickey_is_offered_and_password_is_refused(
    sshd: containers.SshdEndpoint,
) -> None:
    import paramiko

    with socket.create_connection((sshd.host, sshd.port), timeout=5) as sock:
        transport = paramiko.Transport(sock)
        try:
            transport.start_client(timeout=10)
            with pytest.raises(paramiko.BadAuthenticationType) as info:
                transport.auth_password("hermes", "hermes")
            assert info.value.allowed_types == ["publickey"]
        finally:
            transport.close()


def test_a_key_not_handed_to_the_container_is_refused(sshd: containers.SshdEndpoint) -> None:
    import paramiko

    other_private, _ = keys.generate_keypair()
    with pytest.raises(paramiko.AuthenticationException):
        _ssh_connect(sshd, pkey=keys.load_private_key(other_private)).close()


def test_kernel_host_has_no_network_and_runs_python(kernel_host: Any) -> None:
    assert kernel_host.attrs["HostConfig"]["NetworkMode"] == "none"
    assert kernel_host.exec_run("ls /sys/class/net").output.decode().split() == ["lo"]
    result = kernel_host.exec_run("python3 -c 'print(2)'")
    assert (result.exit_code, result.output) == (0, b"2\n")


def test_kernel_host_memory_limit_has_no_swap_and_oom_is_counted(kernel_host: Any) -> None:
    host_config = kernel_host.attrs["HostConfig"]
    assert host_config["Memory"] == host_config["MemorySwap"] == 256 * MIB
    read = "cat /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events"
    before = _oom_kills(kernel_host.exec_run(["sh", "-c", f"{read} 2>/dev/null"]).output)
    hog = kernel_host.exec_run(["python3", "-c", "a = []\nwhile True: a.append(b'x' * (32 << 20))"])
    after = _oom_kills(kernel_host.exec_run(["sh", "-c", f"{read} 2>/dev/null"]).output)
    assert hog.exit_code == 137  # SIGKILL; only the counter tells it was the OOM killer
    assert after == before + 1
    kernel_host.reload()
    assert kernel_host.status == "running"  # PID 1 (tini) survives a cell's OOM


def _oom_kills(text: bytes) -> int:
    for line in text.decode().splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    pytest.fail(f"no oom_kill counter in the container's cgroup files: {text!r}")


def _dead_pid() -> tuple[int, float]:

    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    started = start_time(process.pid)
    process.kill()
    process.wait()
    return process.pid, started


@pytest.mark.parametrize("engine", ["testcontainers", "docker-py"])
def test_a_start_cut_short_after_the_engine_made_the_container_leaves_none(
    kernel_image: str, run_id: str, docker_client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """B40: pytest-timeout's signal method (or Ctrl-C) raises while the engine's answer is on its
    way: the container exists, the start never returned its id. Testcontainers' path (the
    environment's engine) and docker-py's (a named engine) both remove it, by its start token."""
    from docker.models.containers import Container

    real_start = Container.start

    def start_then_interrupt(self: Any, *args: Any, **kwargs: Any) -> Any:
        real_start(self, *args, **kwargs)
        raise KeyboardInterrupt

    monkeypatch.setattr(Container, "start", start_then_interrupt)  # both paths create, then start
    with pytest.raises(KeyboardInterrupt):
        containers.start_kernel_host(image=kernel_image, run_id=run_id, worker_id="w",
                                     client=docker_client if engine == "docker-py" else None)

    assert docker_client.containers.list(all=True, filters={"label": f"{labels.LABEL_RUN_ID}={run_id}"}) == []


def test_sweep_removes_dead_hosts_containers_and_never_unlabelled_ones(
    kernel_image: str, docker_client: docker.DockerClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import socket
    import uuid

    import psutil

    from pytest_hermes_kernel.containers.sharing import current_run_id

    dead_pid, dead_start = _dead_pid()
    me = psutil.Process()
    # sweeps look only at containers made on their own hostname: under a hostname of its own the
    # sweep under test is the only one that can remove these (the start-up sweeps of pytest and
    # CLI subprocesses of parallel tests would remove the dead host's container first)
    hostname = f"hermes-sweep-test-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(socket, "gethostname", lambda: hostname)
    base = labels.run_labels(run_id=current_run_id(), worker_id="test", role="docker-kernel-host")
    assert base[labels.LABEL_HOSTNAME] == hostname
    cases = {
        "dead": {**base, labels.LABEL_HOST_PID: str(dead_pid),
                 labels.LABEL_HOST_START: f"{dead_start:.3f}"},
        "reused": {**base, labels.LABEL_HOST_START: f"{start_time(me.pid) - 3600:.3f}"},
        "alive": base,
        "unlabelled": None,
    }
    ids: dict[str, str] = {}
    try:
        for name, case_labels in cases.items():
            ids[name] = docker_client.containers.run(
                kernel_image, detach=True, network_mode="none", labels=case_labels
            ).id
        removed = sweep.sweep_dead_runs(docker_client)
        assert {ids["dead"], ids["reused"]} <= set(removed)
        assert not {ids["alive"], ids["unlabelled"]} & set(removed)
        left = {c.id for c in docker_client.containers.list(all=True, sparse=True)}
        assert ids["alive"] in left and ids["unlabelled"] in left
        assert ids["dead"] not in left and ids["reused"] not in left
    finally:
        for container_id in ids.values():
            containers.remove_container(container_id, client=docker_client)


def test_debian_mirror_comes_from_a_bookworm_stanza(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(base_image.MIRROR_ENV, raising=False)
    sources = tmp_path / "sources.list.d"
    sources.mkdir()
    (sources / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.invalid/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.invalid/debian\nSuites: bookworm bookworm-updates\n"
    )
    assert base_image.debian_mirror(sources, tmp_path / "none") == "http://mirror.invalid/debian"


def test_debian_mirror_ignores_other_distributions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(base_image.MIRROR_ENV, raising=False)
    listing = tmp_path / "sources.list"
    listing.write_text("deb [arch=amd64] http://mirror.invalid/ubuntu jammy main\n")
    assert base_image.debian_mirror(tmp_path / "none", listing) == base_image.DEFAULT_MIRROR


def test_content_hash_follows_the_build_context_and_base(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM x\n")
    first = images.content_hash(tmp_path, "sha256:a")
    assert images.content_hash(tmp_path, "sha256:a") == first
    assert images.content_hash(tmp_path, "sha256:b") != first
    (tmp_path / "Dockerfile").write_text("FROM y\n")
    assert images.content_hash(tmp_path, "sha256:a") != first


def test_build_context_is_found() -> None:
    assert (images.context_dir() / "Dockerfile").is_file()


def test_a_failed_build_is_tried_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test that needed the image ran the whole failing build again (a debootstrap from a
    mirror that does not answer takes minutes); later calls now raise the first failure at once."""
    from pytest_hermes_kernel.errors import ImageBuildError

    tries: list[str] = []

    def failing_build(client: object, tag: str, progress: object) -> str:
        tries.append(tag)
        raise ImageBuildError("debootstrap failed: mirror did not answer")

    monkeypatch.setattr(images, "_ensure_locked", failing_build)
    monkeypatch.setattr(images, "_failed", {}, raising=False)  # a fresh process
    lock = str(tmp_path / "image.lock")
    for _ in range(3):
        with pytest.raises(ImageBuildError, match="debootstrap failed: mirror did not answer"):
            images.ensure_image(object(), tag="hermes-test:one", lock_path=lock)  # type: ignore[arg-type]
    assert tries == ["hermes-test:one"]
    with pytest.raises(ImageBuildError, match="failed earlier in this process"):
        images.ensure_image(object(), tag="hermes-test:one", lock_path=lock)  # type: ignore[arg-type]
    with pytest.raises(ImageBuildError):
        images.ensure_image(object(), tag="hermes-test:two", lock_path=lock)  # type: ignore[arg-type]
    assert tries == ["hermes-test:one", "hermes-test:two"], "another tag is tried on its own"
