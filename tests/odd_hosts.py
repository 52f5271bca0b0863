"""ssh hosts that are not the kit's clean sshd container: the kit's image run with docker options
a real host has and ``start_sshd`` does not give (a small tmpfs for a home, say), reached as an
explicit ``target=`` with a key and a pinned host key, as a user's own host is.
"""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_hermes_kernel.containers.keys import generate_keypair
from tests.support import container_output


@dataclass(frozen=True)
class OddHost:
    """A running sshd container and what an ``SshTransport(target=...)`` needs to reach it."""

    client: Any  # docker-py DockerClient
    container_id: str
    target: str
    key_file: str
    host_key: str

    def run(self, command: str, user: str = "root") -> str:
        """``sh -c command`` in the container, its complete stdout."""
        return container_output(self.client, self.container_id, ["sh", "-c", command], user=user)

    def transport(self, **options: Any) -> Any:
        """A new ssh transport on this host (close it after)."""
        from pytest_hermes_kernel.transports import make_transport

        return make_transport("ssh", target=self.target, key_filename=self.key_file, host_key=self.host_key,
                              **options)


@contextmanager
def odd_ssh_host(tmp_path: Path, setup: str = "", **docker_options: Any) -> Iterator[OddHost]:
    """The kit's image running sshd with ``docker_options`` (docker-py ``containers.run``: ``tmpfs=``,
    ...), ``setup`` run in it as root before sshd takes logins; removed after.

    Port 22 is published on 127.0.0.1 only; the container carries the kit's run labels (a run id of
    its own), so a sweep of dead runs takes it if the test process dies first.
    """
    import docker

    from pytest_hermes_kernel.containers.images import ensure_image
    from pytest_hermes_kernel.containers.labels import run_labels
    from pytest_hermes_kernel.containers.lifecycle import remove_container

    client = docker.from_env()
    private, public = generate_keypair()
    key = tmp_path / f"odd-{uuid.uuid4().hex[:8]}"
    key.write_text(private)
    key.chmod(0o600)
    script = f"umask 022\n{setup}\nexec /usr/sbin/sshd -D -e"  # the entrypoint leaves its umask 077
    container = client.containers.run(
        ensure_image(client), ["sh", "-c", script], detach=True, network="bridge",
        labels=run_labels(run_id=f"test-{uuid.uuid4().hex}", worker_id="odd", role="sshd"),
        environment={"HERMES_AUTHORIZED_KEY": public.strip()}, ports={"22/tcp": ("127.0.0.1", None)},
        **docker_options)
    try:
        port = _banner_port(container)
        host_key = " ".join(container_output(client, container.id, ["cat", "/etc/ssh/ssh_host_ed25519_key.pub"]).split()[:2])
        yield OddHost(client, container.id, f"hermes@127.0.0.1:{port}", str(key), host_key)
    finally:
        remove_container(container.id, client=client)
        client.close()


def _banner_port(container: Any, timeout: float = 30.0) -> int:
    """The 127.0.0.1 port of the container's sshd, once it sent its ``SSH-`` banner."""
    deadline = time.monotonic() + timeout
    while True:
        container.reload()
        mapped = (container.attrs["NetworkSettings"]["Ports"] or {}).get("22/tcp")
        if mapped:
            try:
                with socket.create_connection(("127.0.0.1", int(mapped[0]["HostPort"])), timeout=2) as sock:
                    if sock.recv(4) == b"SSH-":
                        return int(mapped[0]["HostPort"])
            except OSError:
                pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no sshd banner from container {container.id[:12]} in {timeout} s: "
                                 f"{container.logs(tail=10)!r}")
        time.sleep(0.1)
