"""The ssh transport's default host: an sshd container shared by every process of a run.

The container comes from :func:`~pytest_hermes_kernel.containers.lifecycle.start_sshd` (port 22 published
on 127.0.0.1 only, key-only login as ``hermes``) with a key pair made for it by
:func:`~pytest_hermes_kernel.containers.lifecycle.generate_keypair`. Its record (endpoint, pinned host
key, private key file) is shared through :class:`~.sharing.SharedResource`, so xdist workers and
processes the run starts use one sshd; the private key is a 0600 file next to the state file in
the run's 0700 directory (:mod:`~pytest_hermes_kernel.containers.rundir`), removed with the
container by the run's last user, or by the sweep that removes the container when every user
died. The host key is read from the container with ``docker exec`` and pinned: nothing is
auto-added to a known_hosts.

With a :class:`~pytest_hermes_kernel.containers.reuse.ReusePolicy` (``--hermes-reuse``) the
container is kept between runs like the docker transport's (:mod:`~pytest_hermes_kernel.containers.reuse`):
its private key is then kept in the reuse store (``<cid>.key``, 0600) instead of the run's
directory, and a claimed container is cleared first (as the ``hermes`` user: kernel processes
ended, ``~/.hermes-kernels`` emptied).
"""

from __future__ import annotations

import logging
import os
import re
import tempfile
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...errors import (CLOSED_TRANSPORT_HINT, ContainerGoneError, ContainerStartError, KernelStartError, TransportLostError,
                      TransportUnavailableError)
from ...containers.kept import stays_for_kept_kernel
from ...containers.labels import LABEL_STATE_FILE, LABEL_TMPDIR
from ...containers.lifecycle import container_log
from ...containers.reuse import Claimant, ReusePolicy, ReuseSpec, ReuseStore, claim_or_start, park_or_remove
from ...containers.sharing import SharedResource, refuse_unsafe_run_files, run_file_error, worker_id
from ..detached import CLEAR_KERNELS_SCRIPT, SCAN_END_SH, SSH_KERNEL_ROOT, until_complete
from ..script_pythons import CLEAR_WITHOUT_PYTHON_SH, python_anywhere

if TYPE_CHECKING:
    import docker

    from .connection import SshConnection

HOST_KEY_FILE = "/etc/ssh/ssh_host_ed25519_key.pub"
#: ``MaxSessions`` of the kit's sshd container (containers/kernel-host/sshd_hermes.conf).
CONTAINER_MAX_SESSIONS = 64
Record = dict[str, Any]

log = logging.getLogger(__name__)


class SshdContainer:
    """The run's sshd container, joined on first use (see module docstring).

    :param run_id: groups the shared container (the transport's run id).
    :param image: image to run; ``None`` builds/uses the kernel host image.
    :param reuse: keep the container between runs (see module docstring; not with ``fresh``).
    :raises TransportUnavailableError: if no docker engine answers.
    """

    def __init__(self, *, run_id: str, image: str | None = None, mem_limit_bytes: int | None = None,
                 fresh: bool = False, reuse: ReusePolicy | None = None) -> None:
        import testcontainers.core.container  # noqa: F401  # it starts this container; make_transport names the extra
        from ...containers.images import docker_status

        ok, why = docker_status()
        if not ok:
            raise TransportUnavailableError(f"the ssh transport (without target=) runs an sshd container: {why}")
        refuse_unsafe_run_files("the ssh transport (without target=) runs an sshd container")  # as doctor says
        import docker as docker_sdk

        self.docker: docker.DockerClient = docker_sdk.from_env()
        self.run_id = run_id
        from ...containers.sweep import sweep_once_per_process

        sweep_once_per_process(self.docker, run_id)  # leftovers of dead runs, never this run's
        self.image = image
        self.mem_limit_bytes = mem_limit_bytes
        self.fresh_key = uuid.uuid4().hex[:12] if fresh else ""
        self._shared: SharedResource | None = None
        self._key: str | None = None  # the shared resource's key, kept after leave()
        self.left = False  # leave() was called: never start or join a container again
        self._left_container: str | None = None
        self.record: Record | None = None
        self.reuse = None if fresh else reuse
        self._store = None if self.reuse is None else ReuseStore(self.reuse.directory)

    @property
    def container_id(self) -> str | None:
        return None if self.record is None else self.record["container_id"]

    def log(self, lines: int) -> str:
        """The sshd container's last ``lines`` log lines (``""`` before it runs)."""
        return container_log(self.docker, self.container_id, lines) if self.container_id else ""

    def running(self, container_id: str) -> bool:
        """Whether the container exists and runs (a paused one counts as running)."""
        import docker as docker_sdk

        try:
            return bool(self.docker.api.inspect_container(container_id)["State"]["Running"])
        except docker_sdk.errors.NotFound:
            return False

    def join(self) -> Record:
        """The record of a running sshd: ``host``, ``port``, ``user``, ``key_file``, ``host_key``.

        Starts the container when the run has none or its container stopped. After
        :meth:`leave` it only finds the run's container while another member keeps it running.

        :raises ContainerGoneError: after :meth:`leave`, when the run's container is gone: the
            kernels it ran went with it.
        """
        if self.record is not None and self.running(self.record["container_id"]):
            return self.record
        if self.left:
            return self._find_after_leave()
        if self._shared is None:
            from ...containers.images import ensure_image

            self.image = self.image or ensure_image(self.docker, progress=log.info)
            self._key = re.sub(r"\W", "_", self.image)[-40:] + f"-{self.mem_limit_bytes or 0}{self.fresh_key}"
            self._shared = SharedResource("sshd", self._key, run_id=self.run_id)
        self.record = self._shared.acquire(start=self._start_shared, usable=lambda r: self.running(r["container_id"]),
                                           discard=self._discard)
        return self.record

    def _find_after_leave(self) -> Record:
        """The run's container as another member keeps it, without joining it.

        A closed transport is still asked to end the kernels it started (a registry closed at
        interpreter exit, after the plugin closed the run's transports). Joining again started a
        new sshd container when the run's last member had removed it, and the process then exited
        a member of it: the container and its key outlived the run.
        """
        record = None if self._key is None else SharedResource("sshd", self._key, run_id=self.run_id).peek()
        if record is not None and self.running(record["container_id"]):
            self.record = record
            return record
        if self._left_container is not None and self.running(self._left_container):  # e.g. it holds a kept kernel
            raise TransportLostError("this ssh transport was closed; the sshd container it left still runs, "
                                     f"but the run no longer shares it\n{CLOSED_TRANSPORT_HINT}")
        raise ContainerGoneError("this ssh transport was closed and the run's sshd container is gone, "
                                 f"with the kernels it ran\n{CLOSED_TRANSPORT_HINT}", permanent=True)

    def connect(self, via: Callable[[str, int], tuple[str, int]] | None = None, **options: Any) -> SshConnection:
        """A new connection to the run's sshd (joined first), with its key and pinned host key.

        :param via: maps sshd's address to the one to dial (the transport's ``connect_via``).
        :param options: more :class:`~.connection.SshConnection` keywords (timeouts, sessions).
        :raises TransportLostError: if sshd cannot be reached.
        """
        from ...containers.keys import load_private_key
        from .connection import SshConnection, SshTarget

        record = self._on_its_port_now(self.join())
        with open(record["key_file"], encoding="ascii") as fh:
            pkey = load_private_key(fh.read())
        host, port = record["host"], record["port"]
        if via is not None:  # e.g. a fault proxy that drops can cut
            host, port = via(host, port)
        return SshConnection(SshTarget(host, port, record["user"]), pkey=pkey, host_key=record["host_key"], **options)

    def _on_its_port_now(self, record: Record) -> Record:
        """``record`` with the port the container publishes now: a restarted container (its host
        rebooted) gets a new one, and the old one was dialed for the transport's life."""
        import docker as docker_sdk

        try:
            ports = self.docker.api.port(record["container_id"], 22) or []
        except docker_sdk.errors.DockerException:  # gone meanwhile: the connect says so
            return record
        now = next((int(p["HostPort"]) for p in ports if p.get("HostIp") == record["host"]), record["port"])
        if now != record["port"]:
            log.info("sshd container %s now publishes port 22 on %s (was %s)", record["container_id"][:12],
                     now, record["port"])
            record = dict(record, port=now)
            if self.record is not None and self.record["container_id"] == record["container_id"]:
                self.record = record
        return record

    def leave(self) -> None:
        """Leave the run's container (the last user removes it) and close the docker client."""
        self.left = True
        self._left_container = self.container_id or self._left_container
        shared, self._shared, self.record = self._shared, None, None
        if shared is not None:
            try:
                shared.release(stop=self._stop_shared)
            except Exception as exc:  # noqa: BLE001 - the label sweep is the backstop
                log.warning("could not release the shared sshd container: %s", exc)
        self.docker.close()

    def _start_shared(self) -> Record:
        """The run's first user: start the sshd container, or (reuse on) claim a parked one."""
        assert self._shared is not None and self.image is not None
        if self._store is None or self.reuse is None:
            record, private = self._start({})
            return self._keep_key(record, private, self._shared.side_file("key"))
        shared, store = self._shared, self._store
        spec = ReuseSpec("sshd", self.image, str(self.docker.images.get(self.image).id),
                         (("mem_limit_bytes", str(self.mem_limit_bytes)),))
        return claim_or_start(store, spec, Claimant(self.run_id, shared.state_path, shared.member), self.reuse,
                              start=lambda labels: self._start_reusable(labels, store), ready=self._clear,
                              remove=lambda cid: self._remove({"container_id": cid}))

    def _start_reusable(self, labels: dict[str, str], store: ReuseStore) -> tuple[Record, str]:
        record, private = self._start(labels)
        return dict(record, key_file=store.key_file(record["container_id"])), private

    def _start(self, labels: dict[str, str]) -> tuple[Record, str]:
        """Start an sshd container for a new key pair: its record (no key file yet) and the private key."""
        from ...containers.keys import generate_keypair
        from ...containers.lifecycle import start_sshd

        assert self._shared is not None and self.image is not None
        private, public = generate_keypair()
        endpoint = start_sshd(image=self.image, run_id=self.run_id, worker_id=worker_id(), authorized_key=public,
                              mem_limit_bytes=self.mem_limit_bytes,
                              labels={LABEL_STATE_FILE: self._shared.state_path,
                                      LABEL_TMPDIR: tempfile.gettempdir(), **labels})  # where kept records are
        record = {"container_id": endpoint.container_id, "host": endpoint.host, "port": endpoint.port,
                  "user": endpoint.user}
        try:
            record["host_key"] = self._read_host_key(endpoint.container_id)
        except BaseException:
            self._remove(record)
            raise
        return record, private

    def _keep_key(self, record: Record, private: str, key_file: str) -> Record:
        """Write the private key (0600) as ``key_file`` of the record (the run's side file)."""
        record = dict(record, key_file=key_file)
        try:
            fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(private)
        except BaseException as exc:
            self._remove(record)
            if isinstance(exc, OSError):  # a full disk: it was a bare OSError naming no file
                raise ContainerStartError(f"cannot write the sshd container's key {key_file}: "
                                          f"{run_file_error(exc)}", container_id=record["container_id"]) from None
            raise
        return record

    def _stop_shared(self, record: Record) -> None:
        """The run's last user: remove the container, or park a reusable one (neither while it
        holds a kernel kept for post-mortem: it outlives the run with it, see :mod:`.keep`)."""
        if stays_for_kept_kernel(record["container_id"]):
            return
        if self._store is None or self.reuse is None:
            self._remove(record)
        else:
            park_or_remove(self._store, record, self.reuse, lambda cid: self._remove(record))

    def _discard(self, record: Record) -> None:
        if self._store is not None:
            self._store.forget(record["container_id"])
        self._remove(record)

    def _clear(self, container_id: str) -> bool:
        """A claimed container runs and no kernel of an earlier run is left in it (see module docstring)."""
        from ...containers.lifecycle import SSH_USER

        if not self.running(container_id):
            return False
        argv = python_anywhere(CLEAR_KERNELS_SCRIPT, [f"~/{SSH_KERNEL_ROOT}"], CLEAR_WITHOUT_PYTHON_SH)  # (python3 may be missing)
        exec_id = self.docker.api.exec_create(container_id, argv, user=SSH_USER, stderr=False)["Id"]
        return self.docker.api.exec_start(exec_id).strip() == b"gone"

    def _read_host_key(self, container_id: str) -> str:
        """The container's host key, asked again while a loaded engine loses the answer (:func:`until_complete`)."""
        api = self.docker.api

        def ask() -> tuple[int, bytes | None]:  # the exit code is not read: a complete answer is what counts
            exec_id = api.exec_create(container_id, ["sh", "-c", f"cat {HOST_KEY_FILE}; {SCAN_END_SH}"], user="root")["Id"]
            return 0, api.exec_start(exec_id, demux=True)[0]

        out = until_complete(ask)[0]
        fields = (out or b"").decode("ascii", "replace").split()
        if len(fields) < 2 or not fields[0].startswith("ssh-"):
            raise KernelStartError(f"could not read the sshd container's host key {HOST_KEY_FILE}: {out!r}")
        return f"{fields[0]} {fields[1]}"

    def _remove(self, record: Record) -> None:
        from ...containers.lifecycle import remove_container

        try:
            remove_container(record["container_id"], client=self.docker)
        except Exception as exc:  # noqa: BLE001 - the label sweep is the backstop
            log.warning("could not remove sshd container %s: %s", record["container_id"][:12], exc)
        try:
            os.unlink(record.get("key_file", ""))
        except OSError:
            pass
