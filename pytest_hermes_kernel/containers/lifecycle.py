"""Start and remove the kernel host and sshd containers that the docker and ssh transports use.

Every container made here carries the run's labels (:mod:`.labels`), so
:func:`~.sweep.sweep_dead_runs` can remove what a dead host left behind (and never anything
else). Containers are created through testcontainers'
``DockerContainer`` (so its Ryuk reaper covers them where the Ryuk image exists) with the
options testcontainers has no builder for passed through ``with_kwargs`` to docker-py.

Ports are published on 127.0.0.1 only, and callers always connect to 127.0.0.1, never to a
bridge address. ``docker``, ``testcontainers`` and ``psutil`` are imported inside functions.
"""

from __future__ import annotations

import logging
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

from pytest_hermes_kernel.errors import ContainerStartError

from ..kernel.contract import note_activity
from .engines import disk_full_hint, engine_url
from .image_check import require_image
from .labels import LABEL_START_TOKEN, run_labels

if TYPE_CHECKING:
    import docker
    from docker.models.containers import Container

log = logging.getLogger(__name__)

SSH_USER = "hermes"
LOOPBACK = "127.0.0.1"
START_TIMEOUT = 30.0
LOG_TAIL_LINES = 20
SSHD_COMMAND = ["/usr/sbin/sshd", "-D", "-e"]


@dataclass(frozen=True)
class SshdEndpoint:
    """Where an sshd container answers: always loopback, with a port that is never ``None``."""

    host: str
    port: int
    user: str
    container_id: str


def start_kernel_host(
    *,
    image: str,
    run_id: str,
    worker_id: str,
    mem_limit_bytes: int | None = None,
    cpus: float | None = None,
    network_disabled: bool = True,
    labels: dict[str, str] | None = None,
    user: str = SSH_USER,
    client: docker.DockerClient | None = None,
) -> Container:
    """Start a kernel host container for the docker transport (``sleep infinity`` under tini).

    On ``client``'s engine when one is given (docker-py directly: testcontainers picks its engine
    from its own configuration and cannot be pointed at another one), else through testcontainers
    on the environment's engine.

    :param image: kernel host image (see :func:`pytest_hermes_kernel.containers.images.ensure_image`).
    :param run_id: run id label.
    :param worker_id: worker id label.
    :param mem_limit_bytes: memory limit in bytes; swap is limited to the same value so that
        the cgroup OOM killer really fires. ``None`` is no limit.
    :param cpus: CPU quota in cores (``1.5``); ``None`` is no limit.
    :param network_disabled: ``True`` gives the container no network at all (only ``lo``).
    :param labels: extra labels.
    :param user: user of the container's processes and the default ``exec_run`` user.
    :param client: the engine to start it on (``None``: testcontainers', the environment's).
    :returns: the running docker-py ``Container``; remove it with :func:`remove_container`.
    :raises ContainerStartError: if the container cannot be created or exits at once.
    """
    options: dict[str, Any] = {
        "labels": run_labels(run_id=run_id, worker_id=worker_id, role="docker-kernel-host",
                             extra=labels),
        # `network=` rather than `network_mode=`: testcontainers adds its own `network` (its
        # docker-in-docker guess) when none is given, which would clash with network_mode.
        "network": "none" if network_disabled else "bridge",
        "user": user,
        **_limits(mem_limit_bytes, cpus),
    }
    if client is None:
        container = _start(image, command=["sleep", "infinity"], env={}, options=options)
    else:
        container = _start_on(client, image, command=["sleep", "infinity"], options=options)
    try:
        _check_running(container, "kernel host")
    except BaseException:  # also a timeout or Ctrl-C here (B40): the container goes with the start
        remove_container(container.id or "", client=container.client)
        raise
    return container


def start_sshd(
    *,
    image: str,
    run_id: str,
    worker_id: str,
    authorized_key: str,
    mem_limit_bytes: int | None = None,
    labels: dict[str, str] | None = None,
    timeout: float = START_TIMEOUT,
    clock: Callable[[], float] = time.monotonic,
) -> SshdEndpoint:
    """Start an sshd container that accepts ``authorized_key`` for user ``hermes``.

    Port 22 is published on 127.0.0.1 only. Returns once the mapped port is known and an
    ``SSH-2.0`` banner was read from 127.0.0.1:port (docker-proxy accepts connections before
    sshd listens, so a connect alone proves nothing). On failure the container is removed.

    :param image: kernel host image.
    :param run_id: run id label.
    :param worker_id: worker id label.
    :param authorized_key: OpenSSH public key line (see :func:`generate_keypair`).
    :param mem_limit_bytes: memory limit in bytes (swap limited to the same); ``None``: none.
    :param labels: extra labels.
    :param timeout: seconds for the port mapping and the banner together.
    :param clock: monotonic clock (a seam for tests).
    :returns: the endpoint; the port is always an ``int``.
    :raises ContainerStartError: if the port mapping or the banner is not there in time, or
        the container exits.
    """
    options: dict[str, Any] = {
        "labels": run_labels(run_id=run_id, worker_id=worker_id, role="sshd", extra=labels),
        # Explicit bridge: no testcontainers network guess (a custom network made mapped ports
        # unreliable, testcontainers-python#633).
        "network": "bridge",
        **_limits(mem_limit_bytes, None),
    }
    container = _start(
        image,
        command=SSHD_COMMAND,
        env={"HERMES_AUTHORIZED_KEY": authorized_key.strip()},
        options=options,
        # testcontainers' with_bind_ports() takes no host address; docker-py reads
        # ("127.0.0.1", None) as "a free port on 127.0.0.1 only".
        ports={"22/tcp": (LOOPBACK, None)},
    )
    deadline = clock() + timeout
    try:
        port = _wait_for_port(container, deadline, timeout, clock)
        _wait_for_banner(container, port, deadline, timeout, clock)
    except BaseException:
        remove_container(container.id or "", client=container.client)
        raise
    return SshdEndpoint(host=LOOPBACK, port=port, user=SSH_USER, container_id=container.id or "")


def remove_container(container_id: str, *, client: docker.DockerClient | None = None) -> bool:
    """Force-remove one container by id; a container already gone is fine.

    :param container_id: full or short id.
    :param client: docker-py client; ``None`` opens one from the environment.
    :returns: ``True`` if it was removed now, ``False`` if it was already gone or another
        process is removing it (docker's 409 "removal of container ... is already in progress":
        two sweeps of one dead run at once).
    :raises docker.errors.APIError: for any other refusal of the engine.
    """
    import docker

    owned = client is None
    client = docker.from_env() if client is None else client
    try:
        client.api.remove_container(container_id, force=True, v=True)
        return True
    except docker.errors.NotFound:
        return False
    except docker.errors.APIError as exc:
        if exc.status_code == 409 and "already in progress" in str(exc):
            return False
        raise
    finally:
        if owned:
            client.close()


def container_log(client: docker.DockerClient, container_id: str, lines: int) -> str:
    """The last ``lines`` lines a container wrote (stdout and stderr); ``""`` if it is gone."""
    try:
        return client.api.logs(container_id, tail=lines).decode("utf-8", "replace").rstrip()
    except Exception:  # noqa: BLE001 - gone or engine away: there is no log to show
        return ""


#: ``sh`` printing the OOM kills the memory cgroup of the container it runs in counts (cgroup v2,
#: else v1), or nothing: what a runner the OOM killer ended could not say itself.
OOM_KILLS_SH = ("sed -n 's/^oom_kill //p' /sys/fs/cgroup/memory.events 2>/dev/null || "
                "sed -n 's/^oom_kill //p' /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null")


def memory_limit_words(out: str, mem_limit_bytes: int, shared: bool) -> str:
    """The words for a container under ``mem_limit_bytes`` whose memory cgroup counts OOM kills
    (``out``: what :data:`OOM_KILLS_SH` printed there); ``""`` for none counted.

    :param shared: the container runs other kernels too (their kills count there as well).
    """
    kills = int(out.strip()) if out.strip().isdigit() else 0
    whose = " in all its kernels so far (this one's end may be one of them, or not)" if shared else ""
    return kills and (f"the container's memory cgroup counts {kills} OOM kill(s){whose}: its memory limit (mem_limit_bytes="
                      f"{mem_limit_bytes}) is {'a possible' if shared else 'the likely'} cause: raise it") or ""


def _limits(mem_limit_bytes: int | None, cpus: float | None) -> dict[str, Any]:
    limits: dict[str, Any] = {}
    if mem_limit_bytes is not None:
        limits["mem_limit"] = int(mem_limit_bytes)
        limits["memswap_limit"] = int(mem_limit_bytes)  # no swap: the OOM killer fires
    if cpus is not None:
        limits["nano_cpus"] = int(cpus * 1e9)
    return limits


def _configure_ryuk(client: docker.DockerClient) -> None:
    """Disable testcontainers' Ryuk unless its image is already local (no registry here)."""
    import docker
    from testcontainers.core.config import testcontainers_config

    try:
        client.images.get(testcontainers_config.ryuk_image)
    except docker.errors.ImageNotFound:
        testcontainers_config.ryuk_disabled = True
    except docker.errors.DockerException:
        testcontainers_config.ryuk_disabled = True


def _start(
    image: str,
    *,
    command: list[str],
    env: dict[str, str],
    options: dict[str, Any],
    ports: dict[str, Any] | None = None,
) -> Container:
    from testcontainers.core.container import DockerContainer

    note_activity()  # a container the leak probe may report (see kernel.contract.activity)
    tc = DockerContainer(image).with_command(command)
    for name, value in env.items():  # with_env: testcontainers 4.4 (the declared minimum) has no with_envs
        tc = tc.with_env(name, value)
    client = tc.get_docker_client().client
    require_image(client, image)
    _configure_ryuk(client)
    # with_kwargs() replaces earlier kwargs: all docker-py options go in one call.
    options, token = _with_start_token(options)
    tc = tc.with_kwargs(**options)
    tc.ports.update(ports or {})
    try:
        tc.start()
    except BaseException as exc:  # also a timeout or Ctrl-C inside the start (B40): nothing stays
        _remove_started(client, token)
        if not isinstance(exc, Exception):
            raise
        raise ContainerStartError(f"could not start a container from {image}: {exc}\n{start_hint(exc)}") from exc
    return tc.get_wrapped_container()


def _with_start_token(options: dict[str, Any]) -> tuple[dict[str, Any], str]:
    token = uuid.uuid4().hex
    return {**options, "labels": {**options.get("labels", {}), LABEL_START_TOKEN: token}}, token


def _remove_started(client: docker.DockerClient, token: str) -> None:
    """Remove the container a start cut short made (found by its start token), if any."""
    try:
        for summary in client.api.containers(all=True, filters={"label": f"{LABEL_START_TOKEN}={token}"}):
            remove_container(summary["Id"], client=client)
    except Exception as exc:  # noqa: BLE001 - the start's own error is the one to report
        log.warning("could not remove the container of a failed start (start token %s): %s", token, exc)


def _start_on(client: docker.DockerClient, image: str, *, command: list[str], options: dict[str, Any]) -> Container:
    """A container started on ``client``'s engine with docker-py (see :func:`start_kernel_host`).

    :raises ContainerStartError: if it cannot be created or started (the engine named).
    """
    require_image(client, image)
    options, token = _with_start_token(options)
    note_activity()
    try:
        return client.containers.run(image, command, detach=True, **options)
    except BaseException as exc:  # noqa: BLE001 - any engine refusal: the message names the engine
        _remove_started(client, token)
        if not isinstance(exc, Exception):
            raise
        raise ContainerStartError(f"could not start a container from {image} on the docker engine at "
                                  f"{engine_url(client)}: {exc}\n{start_hint(exc)}") from exc


def start_hint(exc: Exception) -> str:
    """The hint of a container start the engine refused: what to do about its reason. It said
    "build it with `hermes-kernel build-image`; is dockerd running?" of every refusal, a full
    engine disk's ("no space left on device") too, whose image was there and dockerd answering."""
    said, full = str(exc).lower(), disk_full_hint(exc)
    if full:
        return full
    if "no such image" in said:
        return "Hint: build it with `hermes-kernel build-image`, or pull it"
    return "Hint: is dockerd running there and answering (`docker info`)? its log says why it refused"


def _check_running(container: Container, what: str) -> None:
    container.reload()
    if container.status != "running":
        tail = _log_tail(container)
        remove_container(container.id or "", client=container.client)
        raise ContainerStartError(
            f"{what} container {container.short_id} is {container.status!r} right after start."
            f"\n-- last container log lines --\n{tail}\nHint: does the image's entrypoint work?",
            container_id=container.id, log_tail=tail,
        )


def _wait_for_port(
    container: Container, deadline: float, timeout: float, clock: Callable[[], float]
) -> int:
    """Poll ``docker inspect`` until 22/tcp has a 127.0.0.1 mapping (never return ``None``)."""
    while True:
        container.reload()
        if container.status not in ("created", "running"):
            _fail(container, f"sshd container exited ({container.status}) before its port mapping")
        for binding in (container.attrs["NetworkSettings"]["Ports"] or {}).get("22/tcp") or ():
            if binding.get("HostIp") == LOOPBACK and str(binding.get("HostPort", "")).isdigit():
                return int(binding["HostPort"])
        if clock() >= deadline:
            _fail(container, f"port mapping not available after {timeout:g}s")
        time.sleep(0.05)


def _wait_for_banner(
    container: Container, port: int, deadline: float, timeout: float, clock: Callable[[], float]
) -> None:
    while True:
        if _read_banner(port, max(0.05, min(2.0, deadline - clock()))).startswith(b"SSH-2.0"):
            return
        container.reload()
        if container.status != "running":
            _fail(container, f"sshd container exited ({container.status}) before answering")
        if clock() >= deadline:
            _fail(container, f"sshd did not answer on {LOOPBACK}:{port} after {timeout:g}s")
        time.sleep(0.05)


def _read_banner(port: int, timeout: float) -> bytes:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock:
            data = b""
            while b"\n" not in data and len(data) < 256:
                chunk = sock.recv(256)
                if not chunk:
                    break
                data += chunk
            return data
    except OSError:
        return b""


def _fail(container: Container, message: str) -> NoReturn:
    tail = _log_tail(container)
    raise ContainerStartError(
        f"{message} (container {container.short_id}).\n-- last container log lines --\n{tail}\n"
        "Hint: is the image built (`hermes-kernel build-image`)? "
        "does `docker logs` show sshd errors? is dockerd's userland proxy working?",
        container_id=container.id, log_tail=tail,
    )


def _log_tail(container: Container) -> str:
    try:
        return str(container.logs(tail=LOG_TAIL_LINES).decode("utf-8", "replace")).rstrip()
    except Exception as exc:  # the container may be gone already
        return f"<no logs: {exc}>"


