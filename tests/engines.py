"""A second docker engine that the tests start themselves (issue 12 point 7), for as long as a
session needs it.

``dockerd`` runs as root in a network namespace of its own (``unshare --net --fork
--kill-child``: a second engine in the first one's namespace tears down the first one's
``docker0`` bridge), with no bridge and no iptables rules of its own (its containers run with
``network none`` anyway), its own data root, exec root and pid file under one private temp
dir, and only a unix socket there. It is started detached (``setsid --fork``): it serves a whole
session, so it is no child of the test process (whose leak check would count it, and kill it, as
a test's stray subprocess). It is stopped by the pids this module started and recorded (SIGTERM
to the dockerd that our ``unshare`` forked, SIGKILL to ``unshare`` after a deadline: its
``--kill-child`` takes the dockerd with it), never by name, and the first engine is never touched. :meth:`SecondEngine.leftovers` says what is left after the stop
(mounts under its roots, processes whose command line names its dir).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pytest_hermes_kernel.procs import start_time

#: Seconds for the engine's socket to answer after the start, and for its stop.
START_DEADLINE_S = 60.0
STOP_DEADLINE_S = 30.0


class EngineUnavailable(Exception):
    """A second engine cannot be started here (not root, no unshare/dockerd): the reason."""


@dataclass
class SecondEngine:
    """A started second engine: its URL, its dir, the pids this module started."""

    root: str
    unshare_pid: int
    unshare_started: float  # its start time (psutil): a reused pid is not ours
    log_path: str
    left: list[str] = field(default_factory=list)  # what its stop left (:func:`engine_on_a_small_disk`)

    def unshare_alive(self) -> bool:
        import psutil

        try:
            proc = psutil.Process(self.unshare_pid)
            return start_time(proc.pid) == self.unshare_started and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    @property
    def socket(self) -> str:
        return os.path.join(self.root, "docker.sock")

    @property
    def url(self) -> str:
        return f"unix://{self.socket}"

    @property
    def dockerd_pid(self) -> int | None:
        """The dockerd's pid, from its pid file (the child of our ``unshare``)."""
        try:
            with open(os.path.join(self.root, "docker.pid"), encoding="ascii") as fh:
                return int(fh.read().strip())
        except (OSError, ValueError):
            return None

    def log_tail(self, lines: int = 30) -> str:
        try:
            with open(self.log_path, encoding="utf-8", errors="replace") as fh:
                return "".join(fh.readlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        """SIGTERM the dockerd (it stops its containerd and containers), wait for our ``unshare``
        to end, SIGKILL it after :data:`STOP_DEADLINE_S` (``--kill-child`` takes the dockerd with it)."""
        if not self.unshare_alive():
            return self.unmount_data()
        pid = self.dockerd_pid
        if pid is not None and _parent_of(pid) == self.unshare_pid:
            _signal(pid, signal.SIGTERM)
        if not _until(lambda: not self.unshare_alive(), STOP_DEADLINE_S) and self.unshare_alive():
            _signal(self.unshare_pid, signal.SIGKILL)
            _until(lambda: not self.unshare_alive(), 5.0)
        self.unmount_data()

    def unmount_data(self) -> None:
        """Unmount the tmpfs data root :func:`start_second_engine` mounted, if it did (lazily: the
        ended engine's own mounts under it went with its namespace)."""
        if os.path.ismount(os.path.join(self.root, "data")):
            subprocess.run(["umount", "-l", os.path.join(self.root, "data")], check=False, timeout=30)

    def leftovers(self) -> list[str]:
        """Mounts under the engine's dir and processes naming it, after :meth:`stop` (none expected)."""
        with open("/proc/self/mountinfo", encoding="utf-8") as fh:
            mounts = [f"mount {line.split()[4]}" for line in fh if self.root in line.split()[4]]
        procs = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/cmdline", "rb") as fh:
                        cmd = fh.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    continue
                if self.root in cmd:
                    procs.append(f"process {entry}: {cmd.strip()}")
        return mounts + procs

    def remove_dir(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def containers_on(url: str, *labels: str) -> set[str]:
    """Ids of the kit's labelled containers on engine ``url`` with ``labels`` too (running or not)."""
    from pytest_hermes_kernel.containers.engines import engine_client
    from pytest_hermes_kernel.containers.labels import LABEL

    client = engine_client(url)
    try:
        return {c["Id"] for c in client.api.containers(all=True, filters={"label": [f"{LABEL}=1", *labels]})}
    finally:
        client.close()


def start_second_engine(data_mib: int | None = None) -> SecondEngine:
    """Start a second dockerd (see module docstring) and wait until its socket answers.
    ``data_mib``: its data root is a tmpfs of that many MiB (a disk that fills), unmounted by :meth:`SecondEngine.stop`.

    :raises EngineUnavailable: if this machine cannot (the reason says why).
    :raises RuntimeError: if it started but did not answer by :data:`START_DEADLINE_S` (log tail in it).
    """
    missing = [tool for tool in ("unshare", "dockerd") if shutil.which(tool) is None]
    if os.geteuid() != 0 or missing:
        raise EngineUnavailable(f"a second docker engine needs root and unshare + dockerd "
                                f"(uid {os.geteuid()}, missing: {missing or 'nothing'})")
    root = tempfile.mkdtemp(prefix="hermes-engine2-")  # 0700, short: a unix socket path is <= 107 bytes
    log_path = os.path.join(root, "dockerd.log")
    if data_mib is not None:
        os.mkdir(f"{root}/data", 0o700)
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={data_mib}m,mode=0700", "tmpfs", f"{root}/data"],
                       check=True, timeout=30)
    pidfile = os.path.join(root, "unshare.pid")
    detached = ["setsid", "--fork", "sh", "-c", 'echo $$ > "$0"; exec "$@"', pidfile]  # sh execs unshare: same pid
    argv = [*detached, "unshare", "--net", "--fork", "--kill-child", "dockerd", "--data-root", f"{root}/data",
            "--exec-root", f"{root}/exec", "--pidfile", f"{root}/docker.pid", "-H", f"unix://{root}/docker.sock",
            "--bridge=none", "--iptables=false", "--ip6tables=false"]
    with open(log_path, "wb") as log:
        subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, timeout=30, check=True)
    engine = SecondEngine(root=root, unshare_pid=_read_pid(pidfile), unshare_started=0.0, log_path=log_path)
    try:

        engine.unshare_started = start_time(engine.unshare_pid)
        _wait_answers(engine)
    except BaseException:
        engine.stop()
        raise
    return engine


def _read_pid(path: str) -> int:
    """The pid the detached ``sh`` wrote before it became ``unshare``."""
    pid: list[int] = []

    def written() -> bool:
        try:
            with open(path, encoding="ascii") as fh:
                pid.append(int(fh.read().strip()))
            return True
        except (OSError, ValueError):
            return False

    if not _until(written, 10.0):
        raise RuntimeError(f"the detached start of the second dockerd wrote no pid to {path}")
    return pid[-1]


def _until(pred: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


@contextmanager
def engine_on_a_small_disk(first_url: str, data_mib: int, *, images: bool = True) -> Iterator[SecondEngine]:
    """A second engine whose data root is a ``data_mib`` MiB tmpfs, with the kit's images copied from
    the engine at ``first_url`` (or none); stopped and its dir removed after. Its disk is not filled:
    :func:`fill_disk` ``(f"{engine.root}/data/filler")`` does that. Raises :class:`EngineUnavailable`
    as :func:`start_second_engine`; what its stop left is ``engine.left`` after."""
    import gc
    import warnings

    from pytest_hermes_kernel.containers.base_image import BASE_TAG
    from pytest_hermes_kernel.containers.engines import copy_image, engine_client
    from pytest_hermes_kernel.containers.images import ensure_image

    engine = start_second_engine(data_mib=data_mib)
    try:
        source, target = engine_client(first_url), engine_client(engine.url)
        try:
            for tag in (ensure_image(source), BASE_TAG) if images else ():  # both: the kit's image is up to date
                copy_image(tag, source, target)
        finally:
            source.close()
            target.close()
        yield engine
    finally:
        engine.left = stop_second_engine(engine)
        engine.remove_dir()
        with warnings.catch_warnings():  # docker-py's sockets of the stopped engine: collected here
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


def fill_disk(path: str, room_bytes: int = 0) -> None:
    """Write ``path`` until its file system is full, then give ``room_bytes`` of it back."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for chunk in (b"\0" * 2**20, b"\0" * 4096):
            try:
                while os.write(fd, chunk):
                    pass
            except OSError:
                pass
        os.ftruncate(fd, max(0, os.lseek(fd, 0, os.SEEK_CUR) - room_bytes))
    finally:
        os.close(fd)


def stop_second_engine(engine: SecondEngine) -> list[str]:
    """Stop the engine; what is left afterwards (see :meth:`SecondEngine.leftovers`)."""
    engine.stop()
    return engine.leftovers()


def _wait_answers(engine: SecondEngine) -> None:
    import docker

    deadline = time.monotonic() + START_DEADLINE_S
    while True:
        if os.path.exists(engine.socket):
            try:
                client = docker.DockerClient(base_url=engine.url, timeout=5)
                client.close()
                return
            except docker.errors.DockerException:
                pass
        if not engine.unshare_alive() or time.monotonic() >= deadline:
            raise RuntimeError(f"the second dockerd (unshare pid {engine.unshare_pid}) did not answer on "
                               f"{engine.socket} within {START_DEADLINE_S:g} s:\n{engine.log_tail()}")
        time.sleep(0.2)


def _parent_of(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return int(fh.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


def _signal(pid: int, sig: int) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass

