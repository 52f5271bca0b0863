"""A second docker engine that the tests start themselves (issue 12 point 7), for as long as a
session needs it.

``dockerd`` runs as root in a network namespace of its own (``unshare --net --fork
--kill-child``: a second engine in the first one's namespace tears down the first one's
``docker0`` bridge), with no bridge and no iptables rules of its own (its containers run with
``network none`` anyway), its own data root, exec root and pid file under one private temp
dir, and only a unix socket there. It is stopped by the pid this module started (SIGTERM to
the dockerd it forked, then to ``unshare``, SIGKILL after a deadline), never by name, and the
first engine is never touched. :meth:`SecondEngine.leftovers` says what is left after the stop
(mounts under its roots, processes whose command line names its dir).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass

#: Seconds for the engine's socket to answer after the start, and for its stop.
START_DEADLINE_S = 60.0
STOP_DEADLINE_S = 30.0


class EngineUnavailable(Exception):
    """A second engine cannot be started here (not root, no unshare/dockerd): the reason."""


@dataclass
class SecondEngine:
    """A started second engine: its URL, its dir, the pids this module started."""

    root: str
    proc: subprocess.Popen[bytes]  # our ``unshare``
    log_path: str

    @property
    def unshare_pid(self) -> int:
        return self.proc.pid

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
        pid = self.dockerd_pid
        if pid is not None and _parent_of(pid) == self.unshare_pid:
            _signal(pid, signal.SIGTERM)
        else:
            _signal(self.unshare_pid, signal.SIGTERM)
        try:
            self.proc.wait(STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5.0)

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


def start_second_engine() -> SecondEngine:
    """Start a second dockerd (see module docstring) and wait until its socket answers.

    :raises EngineUnavailable: if this machine cannot (the reason says why).
    :raises RuntimeError: if it started but did not answer by :data:`START_DEADLINE_S` (log tail in it).
    """
    missing = [tool for tool in ("unshare", "dockerd") if shutil.which(tool) is None]
    if os.geteuid() != 0 or missing:
        raise EngineUnavailable(f"a second docker engine needs root and unshare + dockerd "
                                f"(uid {os.geteuid()}, missing: {missing or 'nothing'})")
    root = tempfile.mkdtemp(prefix="hermes-engine2-")  # 0700, short: a unix socket path is <= 107 bytes
    log_path = os.path.join(root, "dockerd.log")
    argv = ["unshare", "--net", "--fork", "--kill-child", "dockerd", "--data-root", f"{root}/data",
            "--exec-root", f"{root}/exec", "--pidfile", f"{root}/docker.pid", "-H", f"unix://{root}/docker.sock",
            "--bridge=none", "--iptables=false", "--ip6tables=false"]
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    engine = SecondEngine(root=root, proc=proc, log_path=log_path)
    try:
        _wait_answers(engine, proc)
    except BaseException:
        engine.stop()
        raise
    return engine


def stop_second_engine(engine: SecondEngine) -> list[str]:
    """Stop the engine (its ``unshare`` reaped); what is left afterwards (see :meth:`SecondEngine.leftovers`)."""
    engine.stop()
    return engine.leftovers()


def _wait_answers(engine: SecondEngine, proc: subprocess.Popen[bytes]) -> None:
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
        if proc.poll() is not None or time.monotonic() >= deadline:
            raise RuntimeError(f"the second dockerd (unshare pid {proc.pid}, exit {proc.poll()}) did not answer on "
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

