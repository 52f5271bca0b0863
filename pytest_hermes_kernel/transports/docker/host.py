"""The kernel host containers of one docker transport: the run's shared one, or fresh ones.

``container="shared"``: one container per test run for each (image, limits), shared by every
transport instance and xdist worker through :class:`~pytest_hermes_kernel.containers.sharing.SharedResource`;
the last user removes it, and a shared container that stopped is replaced on the next launch.
``container="fresh"``: one container per kernel, removed with the kernel.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import TYPE_CHECKING, Literal

from ...containers.labels import LABEL_STATE_FILE
from ...containers.sharing import SharedResource, worker_id

if TYPE_CHECKING:
    import docker

ContainerMode = Literal["shared", "fresh"]

log = logging.getLogger(__name__)


class KernelHosts:
    """Which container a kernel runs in, and their lifetimes (see module docstring).

    :param client: the docker-py client of the transport.
    :param mode: ``"shared"`` or ``"fresh"``.
    :param image: image to run; ``None`` builds/uses the kernel host image on first use.
    :param mem_limit_bytes: container memory limit; ``None``: none.
    :param cpus: CPU quota in cores; ``None``: none.
    :param run_id: the run the shared container belongs to.
    """

    def __init__(self, client: docker.DockerClient, *, mode: ContainerMode, image: str | None,
                 mem_limit_bytes: int | None, cpus: float | None, run_id: str) -> None:
        self.client = client
        self.api = client.api
        self.mode: ContainerMode = mode
        self.mem_limit_bytes = mem_limit_bytes
        self.cpus = cpus
        self.run_id = run_id
        self._image = image
        self._lock = threading.Lock()
        self._shared: SharedResource | None = None
        self._shared_id: str | None = None
        self._fresh: set[str] = set()

    @property
    def image(self) -> str:
        """The image kernels run in (built on first use when none was given)."""
        if self._image is None:
            from ...containers.images import ensure_image

            self._image = ensure_image(self.client, progress=log.info)
        return self._image

    @property
    def image_name(self) -> str:
        """The image's name without building it (for descriptions)."""
        return self._image or "hermes-kernel-host"

    @property
    def shared_id(self) -> str | None:
        """The shared container this instance uses now (``None`` before the first launch)."""
        return self._shared_id

    def running(self, container_id: str) -> bool:
        """Whether the container exists and runs (a paused one counts as running)."""
        import docker as docker_sdk

        try:
            return bool(self.api.inspect_container(container_id)["State"]["Running"])
        except docker_sdk.errors.NotFound:
            return False

    def for_launch(self) -> str:
        """The container for a new kernel: a fresh one, or the run's shared one."""
        if self.mode == "fresh":
            cid = self._start()
            with self._lock:
                self._fresh.add(cid)
            return cid
        return self.shared()

    def shared(self) -> str:
        """Join the run's shared container (starting it when there is none or it stopped); its id."""
        with self._lock:
            if self._shared_id is not None and self.running(self._shared_id):
                return self._shared_id
            resource = self._resource()
            record = resource.acquire(
                start=lambda: {"container_id": self._start({LABEL_STATE_FILE: resource.state_path})},
                usable=lambda r: self.running(r["container_id"]),
                discard=lambda r: self.remove(r["container_id"]))
            self._shared_id = record["container_id"]
            return self._shared_id

    def run_container(self) -> str | None:
        """The run's shared container for these options, joined or not (``None``: none yet)."""
        if self._shared_id is not None:
            return self._shared_id
        record = self._resource().peek()
        return None if record is None else record["container_id"]

    def all_known(self) -> list[str]:
        """The run's shared container (if any) and this instance's fresh ones."""
        return [c for c in (self.run_container(), *self._fresh) if c]

    def is_fresh(self, container_id: str) -> bool:
        return container_id in self._fresh

    def done_with(self, container_id: str) -> None:
        """A kernel in a fresh container ended: remove the container."""
        with self._lock:
            self._fresh.discard(container_id)
        self.remove(container_id)

    def remove(self, container_id: str) -> None:
        from ...containers.lifecycle import remove_container

        try:
            remove_container(container_id, client=self.client)
        except Exception as exc:  # noqa: BLE001 - removal is best effort; the label sweep is the backstop
            log.warning("could not remove container %s: %s", container_id[:12], exc)

    def close(self) -> None:
        """Leave the shared container (the run's last user removes it); remove fresh ones."""
        with self._lock:
            fresh, self._fresh = list(self._fresh), set()
            shared, self._shared, self._shared_id = self._shared, None, None
        for cid in fresh:
            self.remove(cid)
        if shared is not None:
            try:
                shared.release(stop=lambda r: self.remove(r["container_id"]))
            except Exception as exc:  # noqa: BLE001 - closing is best effort; the label sweep is the backstop
                log.warning("could not release the shared container: %s", exc)

    def _start(self, labels: dict[str, str] | None = None) -> str:
        from ...containers.lifecycle import start_kernel_host

        container = start_kernel_host(image=self.image, run_id=self.run_id, worker_id=worker_id(),
                                      mem_limit_bytes=self.mem_limit_bytes, cpus=self.cpus,
                                      network_disabled=True, labels=labels)
        return str(container.id)

    def _resource(self) -> SharedResource:
        if self._shared is None:
            key = hashlib.sha256(repr((self.image, self.mem_limit_bytes, self.cpus)).encode()).hexdigest()[:12]
            self._shared = SharedResource("docker", key, run_id=self.run_id)
        return self._shared
