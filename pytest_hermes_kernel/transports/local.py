"""Local transport: the kernel runner as a process of this machine, forked by a kernel server.

By default a kernel is forked by a kernel server (:mod:`.local_server`, ``kernel/runner/server.py``):
a start is one message and a fork, not a new interpreter. With ``server=False``, or when the server
is gone or refuses (said in the first result's ``kernel.note``), the runner starts as a child process:
the runner file (:mod:`.runner_zipapp`) is written into the kernel's private dir and run from there,
as on every other transport. Either way the kernel leads its own session, so it and everything it
starts can be found and killed together, and its kernel dir is private (0700). The channel is one end of a socketpair passed by
fd: it is also the parent-death lease. When the host dies by any means (SIGKILL included, also
mid-cell) the kernel sees EOF and kills its worker's process group, then exits.
``PR_SET_PDEATHSIG`` is not used for the host link: it fires when the *thread* that spawned the
child exits, and registries spawn kernels from short-lived threads (the seed system rejected it
for the same reason).

Environment: the runner starts with a fixed launch environment (:func:`launch_env`: the host's
own ``PATH``, ``HOME``, locale and the variables this host's interpreter may need to start), so a
kernel's ``PYTHONPATH``, ``PYTHONHOME`` or ``LD_PRELOAD`` never changes how its runner starts.
The kernel's environment (``LaunchSpec.env``, whole) travels in the config on stdin and becomes
the worker's ``os.environ`` (``kernel/runner/environ.py``): cells and what they start see it.
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from typing import IO, Any, ClassVar

import psutil

from ..errors import KernelStartError, TransportLostError
from ..kernel.channel import SocketStream, lease
from ..kernel.contract import Launched, LaunchSpec, Transport
from ..kernel.files import KernelFiles
from ..kernel.runner.attach import unix_call
from ..kernel.runner.environ import SERVER_KERNEL_ID
from ..containers.kept import TMPDIR_ENV
from ..containers.rundir import read_file_tail  # (a cell's fifo as its log: no read waits)
from ..procs import kill_session, note_left_behind, pid_alive, read_stat, start_ticks
from .forked import with_fallback
from ..kernel.options import check_options
from .kernel_dirs import (KERNEL_DIR_PREFIX, discard_kernel_dir, kernel_dir_root, new_kernel_dir, remove_kernel_dir,
                          short_of, sweep_stale_kernel_dirs)
from .local_server import DEFAULT_MAX_SERVERS, DEFAULT_SERVER_IDLE_TIMEOUT_S, LocalServer, LocalServers
from .runner_zipapp import runner_zipapp, write_runner

LOG_NAME = "runner.log"
#: The socket a kept kernel listens on, in its 0700 kernel dir (``--hermes-keep-failed``).
KEPT_SOCKET_NAME = "kept.sock"
#: Poll interval (seconds) while waiting for a forked runner where there are no pidfds.
_POLL_S = 0.005
_FIRST_REAP_POLL_S = 0.0002  #: first wait (s) for a server to reap its ended kernel, doubled up to _POLL_S
#: Seconds a forked runner that ended may take to be reaped by its server (one SIGCHLD).
REAPED_WAIT_S = 1.0
#: Host variables a runner starts with (the host's values, never the kernel's ``env``): what it may need to start.
LAUNCH_ENV_NAMES = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "PYTHONHOME", "LD_LIBRARY_PATH")


def launch_env(kernel_id: str) -> dict[str, str]:
    """The fixed environment a local runner starts with: :data:`LAUNCH_ENV_NAMES` as the host has
    them, and the kernel markers (:func:`~.detached.launch_env`: the leak probes, ``hermes-kernel
    sweep`` and the failed-launch kill find a kernel's processes by them), and this host's temp
    dir (:data:`~pytest_hermes_kernel.containers.kept.TMPDIR_ENV`: a sweep run with another
    ``TMPDIR`` finds a kept kernel's record by it). The kernel's own environment is applied by its
    worker (``kernel/runner/environ.py``).
    """
    from .detached import launch_env as markers

    env = {name: os.environ[name] for name in LAUNCH_ENV_NAMES if name in os.environ}
    env.update(markers(kernel_id))
    env[TMPDIR_ENV] = tempfile.gettempdir()  # where its record is, should it be kept: the sweeps look there
    return env


class LocalTransport(Transport):
    """Kernels as local processes (see module docstring).

    :param python: the interpreter kernels run (default: this one).
    :param server: fork kernels from a kernel server (:mod:`.local_server`); ``False`` starts
        every runner as a new process (the spawn path).
    :param max_servers: kernel servers kept at once (one per interpreter and launch environment).
    :param server_idle_timeout: seconds a server without requests and kernels lives on.
    """

    name: ClassVar[str] = "local"
    keepable: ClassVar[bool] = True

    def __init__(self, *, python: str | None = None, server: bool = True, max_servers: int = DEFAULT_MAX_SERVERS,
                 server_idle_timeout: float | None = DEFAULT_SERVER_IDLE_TIMEOUT_S) -> None:
        check_options("local transport", optional=("python", "server_idle_timeout"), commands={"python": python},
                      counts={"max_servers": max_servers}, seconds={"server_idle_timeout": server_idle_timeout})
        self.python = python or sys.executable
        self.server = server
        self._servers = LocalServers(kernel_dir_root(), max_servers, server_idle_timeout) if server else None

    @property
    def runs_on_this_host(self) -> bool:
        return True

    def launch(self, spec: LaunchSpec) -> Launched:
        """Fork the kernel from a kernel server, or spawn its runner (no server, or it failed)."""
        python = spec.python or self.python
        usable = self._servers is not None and (not spec.cwd or os.path.isdir(spec.cwd))  # a bad cwd: the spawn's error
        return with_fallback((lambda: self._fork(spec, python)) if usable else None, lambda: self._spawn(spec, python))

    def _fork(self, spec: LaunchSpec, python: str) -> Launched:
        assert self._servers is not None
        host_end, kernel_end = _channel()
        try:
            kdir = new_kernel_dir()
        except BaseException:
            host_end.close()
            kernel_end.close()
            raise
        config = dict(spec.config, kernel_dir=kdir, rename_kernel_dir=True, env=spec.env, env_clear=True, log=os.path.join(kdir, LOG_NAME))
        try:
            pid, server = self._servers.spawn(python, launch_env(SERVER_KERNEL_ID), config, kernel_end)
        except BaseException:
            host_end.close()
            kernel_end.close()  # first: removing the dir may need the fds
            discard_kernel_dir(kdir, LOG_NAME)
            raise
        finally:
            kernel_end.close()
        return Launched(stream=SocketStream(host_end), pid=pid, kernel_dir=kdir,
                        label=f"local pid {pid}, forked by kernel server {server.pid}",
                        extra={"runner": ForkedRunner(pid, server), "start_ticks": start_ticks(pid)})

    def _spawn(self, spec: LaunchSpec, python: str) -> Launched:
        host_end, kernel_end = _channel()
        kdir: str | None = None
        runner: str | None = None
        log: IO[bytes] | None = None
        try:
            kdir, runner = _make_kernel_dir()
            log = open(os.path.join(kdir, LOG_NAME), "wb")
            proc = subprocess.Popen(
                [python, "-B", runner, "serve", "--fd", str(kernel_end.fileno())],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log,
                pass_fds=(kernel_end.fileno(),), start_new_session=True,
                env=launch_env(spec.kernel_id), cwd=spec.cwd or kdir,
            )
        except BaseException as exc:
            host_end.close()
            kernel_end.close()  # first: removing the dir may need the fds (it stayed, with a bare OSError)
            if log is not None:
                log.close()
            if kdir is not None:
                discard_kernel_dir(kdir, LOG_NAME, os.path.basename(runner or ""))
            if not isinstance(exc, OSError):
                raise
            hint = short_of(exc) or (
                "check the interpreter path (option python=...)" if not spec.cwd or os.path.isdir(spec.cwd) else
                f"the working directory cwd={spec.cwd!r} " + ("is not a directory" if os.path.exists(spec.cwd) else "does not exist"))
            raise KernelStartError(f"could not start the local kernel runner with {python!r}: "
                                   f"{exc}\nHint: {hint}.") from None
        finally:
            kernel_end.close()
            if log is not None:
                log.close()
        try:
            config = dict(spec.config, kernel_dir=kdir, rename_kernel_dir=True, env=spec.env, env_clear=True)  # the whole environment
            proc.stdin.write(json.dumps(config).encode())  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass  # it died at once; the hello wait reports it with the runner log
        return Launched(stream=SocketStream(host_end), pid=proc.pid, kernel_dir=kdir,
                        label=f"local pid {proc.pid}",
                        extra={"runner": SpawnedRunner(proc), "start_ticks": start_ticks(proc.pid)})

    def kill(self, launched: Launched) -> bool:
        if launched.pid is None:
            return True
        leader = launched.extra.get("start_ticks")  # once the runner is reaped its pid may be reused (B29)
        kill_session(launched.pid, leader_start=leader)
        if not launched.extra["runner"].wait(5.0):
            return False
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:  # members of the session re-parented to init
            if not kill_session(launched.pid, leader_start=leader):
                return True
            time.sleep(0.02)
        return False

    def alive(self, launched: Launched) -> bool:
        return launched.extra["runner"].alive()

    def frozen(self, launched: Launched) -> bool:
        """Whether the runner is stopped (SIGSTOP, a debugger): a shutdown stops waiting for a reply
        it cannot send and kills it (a stopped runner's shutdown waited 10 s for nothing)."""
        fields = None if launched.pid is None else read_stat(launched.pid)
        return (fields is not None and fields[0] in (b"T", b"t")
                and int(fields[19]) == launched.extra.get("start_ticks", int(fields[19])))

    def reap(self, launched: Launched, timeout: float) -> bool:
        """Wait for the runner to exit, leaving no zombie; True when it did within ``timeout``."""
        return launched.extra["runner"].wait(timeout)

    def exit_status(self, launched: Launched, timeout: float) -> int | None:
        return launched.extra["runner"].exit_status(timeout)

    def sweep_stale(self, max_age_s: float) -> int:
        return sweep_stale_kernel_dirs(max_age_s)

    def cleanup(self, launched: Launched) -> None:
        launched.extra["runner"].close()
        if launched.kernel_dir:
            remove_kernel_dir(launched.kernel_dir)

    def note_leftovers(self, launched: Launched, kernel_id: str, processes: list[tuple[int, int, str]]) -> None:
        note_left_behind(processes, kernel_id)  # the host's kernel-process probe lists them while they live

    def runner_log(self, launched: Launched, lines: int = 20) -> str:
        try:
            text = read_file_tail(os.path.join(launched.kernel_dir or "", LOG_NAME), 1 << 20).decode("utf-8", "replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def files(self, launched: Launched, workdir: str) -> KernelFiles:
        """The kernel's files, reached in this process (:class:`~.files.LocalFiles`)."""
        from .files import LocalFiles

        return LocalFiles(workdir)

    def locator(self, launched: Launched) -> dict[str, Any]:
        return {"runner_pid": launched.pid, "kernel_dir": launched.kernel_dir,
                "start_ticks": launched.extra.get("start_ticks"), "listen": self.keep_address(launched)}

    def keep_address(self, launched: Launched) -> str | None:
        """The 0600 socket a kept kernel listens on, in its 0700 kernel dir (until then its channel
        is the parent-death lease)."""
        return os.path.join(launched.kernel_dir, KEPT_SOCKET_NAME) if launched.kernel_dir else None

    def release(self, launched: Launched) -> None:
        launched.extra["runner"].disown()

    def attach_kept(self, locator: dict[str, Any]) -> Launched:
        """Connect to a kept kernel's socket (:meth:`keep_address`), checking its runner is the same
        process (pid and start time) first.

        :raises TransportLostError: if the runner is gone or its socket refuses the connection.
        """
        pid, ticks, path = locator.get("runner_pid"), locator.get("start_ticks"), locator.get("listen")
        if not isinstance(pid, int) or not path or start_ticks(pid) != ticks:
            raise TransportLostError(f"the kept local kernel runner {pid} is gone", permanent=True)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            unix_call(sock, "connect", path)
        except OSError as exc:
            sock.close()
            raise TransportLostError(f"the kept local kernel at {path} refused the connection: {exc}",
                                     permanent=True) from None
        return Launched(stream=SocketStream(sock), pid=pid, kernel_dir=locator.get("kernel_dir"),
                        label=f"local pid {pid}, kept", extra={"runner": ForkedRunner(pid, None), "start_ticks": ticks})

    def cleanup_kept(self, locator: dict[str, Any]) -> None:
        """Remove a gone kept kernel's kernel dir (its runner was killed, so nothing removed it):
        only a local kernel dir, never through a symlink, and not while its runner still runs."""
        kdir = locator.get("kernel_dir")
        if not (isinstance(kdir, str) and os.path.basename(kdir).startswith(KERNEL_DIR_PREFIX)) or os.path.islink(kdir):
            return
        if runner_runs(locator):
            return  # the same runner still runs: it is not gone
        remove_kernel_dir(kdir)

    def server_pids(self) -> list[int]:
        """Pids of this transport's kernel servers that may be running (none on the spawn path)."""
        return [] if self._servers is None else self._servers.pids()

    def close(self) -> None:
        """Close the kernel servers (kernels they forked live on, each on its own lease)."""
        if self._servers is not None:
            self._servers.close()

    def describe(self) -> str:
        return f"local ({self.python}, {'kernel server' if self._servers is not None else 'spawn'})"


def runner_runs(locator: dict[str, Any]) -> bool:
    """Whether the runner a local kernel's :meth:`LocalTransport.locator` names still runs: the
    same process (its pid and start time), not a zombie, not another that got its pid."""
    pid = locator.get("runner_pid")
    return isinstance(pid, int) and pid_alive(pid) and start_ticks(pid) == locator.get("start_ticks")


class SpawnedRunner:
    """A runner started as our child process: waited for with ``Popen.wait`` (no zombie left)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        # A handle dropped unshut (its lease ends the runner an instant later): let go as disown() does.
        # Its Popen warned "subprocess N is still running", an error at pytest's end under -W error.
        weakref.finalize(self, _let_go, proc).atexit = False

    def wait(self, timeout: float) -> bool:
        """True when the runner has exited within ``timeout`` seconds (``0``: just look)."""
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True

    def alive(self) -> bool:
        """Runs and is no zombie (a zombie is dead even while nobody reaped it)."""
        return self.proc.poll() is None and pid_alive(self.proc.pid)

    def exit_status(self, timeout: float) -> int | None:
        """The exit code once it ended within ``timeout`` seconds (``-N``: signal ``N``), else ``None``."""
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """Nothing to release (``Popen`` collected the exit status)."""

    def disown(self) -> None:
        """A kept kernel's runner outlives our hold: its ``Popen`` must not warn when collected
        (``Popen.__del__`` checks ``_child_created``, CPython 3.8-3.13); a daemon thread reaps it
        once it ends (TTL, ``sweep --kept``), never a zombie child for this process's life."""
        _let_go(self.proc)


def _let_go(proc: subprocess.Popen[bytes]) -> None:
    """See :meth:`SpawnedRunner.disown` (once: a disowned runner's finalizer finds it let go)."""
    if proc._child_created and proc.poll() is None:  # type: ignore[attr-defined]
        proc._child_created = False  # type: ignore[attr-defined]
        threading.Thread(target=proc.wait, name=f"hermes-shared reaper of runner {proc.pid}", daemon=True).start()


class ForkedRunner:
    """A runner a kernel server forked: not our child, so waited for through a pidfd (Linux >= 5.3;
    elsewhere by polling its pid). Its server collects its exit status.

    :param pid: the runner's pid, as the server reported it (open the pidfd at once).
    :param server: the server that forked it (it knows the exit status); ``None`` for a kept
        runner another process started (its exit status is nobody's to tell).
    """

    def __init__(self, pid: int, server: LocalServer | None) -> None:
        self.pid = pid
        self.server = server
        self._lock = threading.Lock()  # close() from one thread while another waits
        self.pidfd: int | None
        try:
            self.pidfd = os.pidfd_open(pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def wait(self, timeout: float) -> bool:
        """True when the runner has ended within ``timeout`` seconds (``0``: just look); when it has, its server's
        reaping is waited for too (at most :data:`REAPED_WAIT_S`): no zombie is left, as on the spawn path. Not a kept
        runner's (no server here): its reaper is init or another process (``sweep --kept`` waited 1 s a kernel).

        Each wait selects on its own duplicate of the pidfd: a :meth:`close` from another thread
        (a shutdown while a cell's thread asks whether the runner lives) can neither make it fail
        nor make it wait on whatever file reused the number."""
        with self._lock:
            try:
                pidfd = None if self.pidfd is None else os.dup(self.pidfd)
            except OSError:  # no fd left for the copy: poll the pid (shutdown() raised a bare OSError)
                pidfd = None
        if pidfd is not None:
            try:
                ended = bool(select.select([pidfd], [], [], max(0.0, timeout))[0])
            finally:
                os.close(pidfd)
            if ended and timeout > 0 and self.server is not None:
                self._wait_reaped()
            return ended
        deadline = time.monotonic() + timeout
        while self._pid_alive():
            if time.monotonic() >= deadline:
                return False
            time.sleep(_POLL_S)
        return True

    def _pid_alive(self) -> bool:
        try:
            return pid_alive(self.pid)
        except OSError:  # no fd left to read /proc: signal 0 needs none (a zombie counts until its server reaps it)
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                pass
            return True

    def alive(self) -> bool:
        """Runs and is no zombie (its pidfd is readable once it ended, reaped or not)."""
        return not self.wait(0.0)

    def exit_status(self, timeout: float) -> int | None:
        """The exit code once it ended within ``timeout`` seconds, as its server reaped it."""
        if not self.wait(timeout) or self.server is None:
            return None
        return self.server.exit_status(self.pid)

    def _wait_reaped(self) -> None:
        deadline = time.monotonic() + REAPED_WAIT_S
        pause = _FIRST_REAP_POLL_S  # its server reaps it within about a millisecond (5 ms polls cost each shutdown 5)
        while psutil.pid_exists(self.pid) and time.monotonic() < deadline:  # a zombie until its server reaps it
            time.sleep(pause)
            pause = min(2 * pause, _POLL_S)

    def close(self) -> None:
        """Release the pidfd."""
        with self._lock:
            if self.pidfd is not None:
                os.close(self.pidfd)
                self.pidfd = None

    disown = close  # its server, not this process, is its parent


def _make_kernel_dir() -> tuple[str, str]:
    """A new kernel dir (:func:`new_kernel_dir`) holding the runner file (a forked kernel runs
    its server's instead).

    :returns: the dir and the runner file's path in it.
    :raises KernelStartError: if the runner file cannot be written there.
    """
    kdir = new_kernel_dir()
    try:
        return kdir, write_runner(kdir)  # ~0.1 ms; private, and it goes with the kernel
    except OSError as exc:
        discard_kernel_dir(kdir, runner_zipapp().name)
        raise KernelStartError(f"could not write the kernel runner into {kdir}: {exc}\nHint: "
                               + (short_of(exc) or "is the kernel dir root writable (PYTEST_HERMES_KERNEL_DIR)?")) from None


def _channel() -> tuple[socket.socket, socket.socket]:
    """A kernel's channel: both ends of a socketpair (a start short of fds says so, not a bare ``OSError``)."""
    try:
        host_end, kernel_end = socket.socketpair()
    except OSError as exc:
        raise KernelStartError(f"could not make the local kernel's channel: {exc}\nHint: "
                               + (short_of(exc) or "see the error above")) from None
    return lease(host_end), lease(kernel_end)  # a child forked before the kernel has its end holds neither
