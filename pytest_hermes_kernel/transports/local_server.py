"""The host's side of local kernel servers (``kernel/runner/server.py``): start them, ask them, drop them.

A :class:`LocalTransport <.local.LocalTransport>` keeps a small pool (:class:`LocalServers`):
one server per (interpreter, launch environment, what a started process inherits from this one:
:func:`inherited_state`), at most ``max_servers`` (the least recently
used one is closed past that), each exiting by itself after ``idle_timeout`` seconds without a
request and with no kernel of its own alive. A server whose site dirs changed since it started
refuses as ``stale``: it is retired (no more spawns; it still answers for the kernels it forked
until it idles out) and a new one takes its place. The kernel's own environment and cwd are applied in
the forked kernel (``kernel/runner/environ.py``), so they need no server of their own.

A server is started with the same fixed launch environment as a spawned runner, its
``HERMES_KERNEL_ID`` being the slot each forked kernel writes its own id over. Its control
socket (a ``SOCK_SEQPACKET`` socketpair) is its lease: this process's death, by any means, ends
it. Whatever goes wrong with a server (it exited, it refused, it does not answer) is a
:class:`~pytest_hermes_kernel.errors.KernelServerUnavailable`: the transport then starts the
kernel by a plain spawn and says so in the first result's ``kernel.note``.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import resource
import select
import socket
import subprocess
import tempfile
import threading
import time
import weakref
from typing import Any

import psutil

from ..errors import KernelServerUnavailable
from ..kernel.channel import lease
from ..kernel.runner.environ import SERVER_KERNEL_ID_PREFIX
from ..kernel.runner.trees import remove_tree
from ..procs import children, note_left_behind, read_stat, start_ticks
from .runner_zipapp import runner_zipapp, write_runner

SERVER_DIR_PREFIX = "hermes-kernel-server-"
DEFAULT_MAX_SERVERS = 4
#: Seconds a server without requests and without kernels of its own lives on.
DEFAULT_SERVER_IDLE_TIMEOUT_S = 300.0
#: Seconds for a server's first answer (its interpreter starts and imports the runner first).
FIRST_REPLY_TIMEOUT_S = 30.0
#: Seconds for any later answer (one fork).
REPLY_TIMEOUT_S = 10.0
#: Seconds between looks at whether a server that has not answered yet is stopped.
STOPPED_CHECK_S = 0.25
#: Largest spawn request sent (a datagram of the control socket must fit its send buffer).
MAX_REQUEST_BYTES = 160_000
#: Pids of forked kernels a server's record holds before those that ended are dropped from it.
FORKED_KEPT = 256


class LocalServer:
    """One kernel server process of this host.

    :param python: the interpreter it runs.
    :param env: its launch environment, ``HERMES_KERNEL_ID`` being the slot
        (:data:`~pytest_hermes_kernel.kernel.runner.environ.SERVER_KERNEL_ID`).
    :param root: where its private dir (runner file, log) is made.
    :param idle_timeout: seconds without requests after which it exits (``None``: never).
    :raises KernelServerUnavailable: if it cannot be started.
    """

    def __init__(self, python: str, env: dict[str, str], root: str, idle_timeout: float | None) -> None:
        self.python = python
        self.owner = os.getpid()  # a forked copy of this process holds a copy, not the server
        try:
            self.control, theirs = map(lease, socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET))
        except OSError as exc:  # no fd left: the spawn path's error says so (it was a bare OSError, the dir left)
            raise KernelServerUnavailable(f"could not start a kernel server with {python!r}: {exc}") from None
        try:
            self.dir = tempfile.mkdtemp(prefix=f"{SERVER_DIR_PREFIX}{os.getpid()}-", dir=root)
            os.chmod(self.dir, 0o700)  # 0700 less the umask: under umask 0277 one its owner cannot write
        except OSError as exc:
            self.control.close()
            theirs.close()
            raise KernelServerUnavailable(f"could not start a kernel server with {python!r}: {exc}") from None
        self.lock = threading.Lock()
        self.ids = itertools.count(1)
        self.answered = False
        self.gone = ""
        self.retired = ""  # why it forks no more kernels (it still answers for those it forked)
        self.last_used = time.monotonic()
        self.forked: set[int] = set()  # the kernels it forked: its other children are what it adopted
        self._prune_at = FORKED_KEPT
        try:
            self.proc = self._start(theirs, env, idle_timeout)
        except OSError as exc:
            self.control.close()
            theirs.close()  # first: removing the dir may need the fds
            for name in ("server.log", runner_zipapp().name):
                with contextlib.suppress(OSError):
                    os.unlink(os.path.join(self.dir, name))
            remove_tree(self.dir)
            raise KernelServerUnavailable(f"could not start a kernel server with {python!r}: {exc}") from None
        finally:
            theirs.close()

    def _start(self, theirs: socket.socket, env: dict[str, str], idle_timeout: float | None) -> subprocess.Popen[bytes]:
        runner = write_runner(self.dir)
        with open(os.path.join(self.dir, "server.log"), "wb") as log:
            proc = subprocess.Popen([self.python, "-B", runner, "server", "--fd", str(theirs.fileno())],
                                    stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=log,
                                    pass_fds=(theirs.fileno(),), start_new_session=True, env=env, cwd=self.dir)
        try:
            proc.stdin.write(json.dumps({"idle_timeout": idle_timeout, "server_dir": self.dir}).encode())  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass  # it died at once: the first request says so
        return proc

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def usable(self) -> bool:
        """Not known to be gone (an idle server may still have exited: a request finds out)."""
        return not self.gone and self.proc.poll() is None

    def spawn(self, config: dict[str, Any], channel: socket.socket) -> int:
        """Ask for a kernel with runner ``config`` on the kernel's end of its ``channel``.

        :returns: the forked kernel's pid (its session id).
        :raises KernelServerUnavailable: if the server refused (``gone`` stays empty; ``retired``
            says why when a new server would not refuse) or is gone.
        """
        with self.lock:  # the record too: a scan from before another thread's fork would drop its kernel
            reply = self._ask({"type": "spawn", "config": config}, channel)
            if reply.get("stale"):  # a site dir changed since it started: a new server forks the kernel
                self.retired = str(reply.get("error"))
            if reply.get("type") != "spawned" or not isinstance(reply.get("pid"), int):
                raise KernelServerUnavailable(f"the kernel server refused: {reply.get('error', reply)}")
            self.forked.add(int(reply["pid"]))
            if len(self.forked) > self._prune_at:  # one per kernel the server ever forked, before: those still running
                self.forked &= {child.pid for child in children(self.pid)}
                self._prune_at = max(FORKED_KEPT, 2 * len(self.forked))  # (a scan of the process table each time)
        return int(reply["pid"])

    def exit_status(self, pid: int) -> int | None:
        """How kernel ``pid`` ended, as its server reaped it (``-N``: signal ``N``); ``None`` if unknown."""
        try:
            with self.lock:
                reply = self._ask({"type": "status", "pid": pid}, None)
        except KernelServerUnavailable:
            return None
        code = reply.get("exit_code")
        return code if isinstance(code, int) else None

    def _ask(self, message: dict[str, Any], channel: socket.socket | None) -> dict[str, Any]:
        if not self.usable:  # closed now, not at the transport's close: its dir goes with it
            self._lose(self.gone or f"the kernel server (pid {self.pid}) has exited")
        rid = next(self.ids)
        request = json.dumps(dict(message, id=rid)).encode("utf-8")
        if len(request) > MAX_REQUEST_BYTES:
            raise KernelServerUnavailable(f"the kernel's config is too large for the server ({len(request)} bytes)")
        timeout = REPLY_TIMEOUT_S if self.answered else FIRST_REPLY_TIMEOUT_S
        try:
            socket.send_fds(self.control, [request], [] if channel is None else [channel.fileno()])
            reply = self._recv(timeout)
        except (OSError, TimeoutError) as exc:
            self._lose(f"the kernel server (pid {self.pid}) did not answer: {type(exc).__name__}: {exc}")
        if reply is None:
            self._lose(f"the kernel server (pid {self.pid}) has exited")
        self.answered, self.last_used = True, time.monotonic()
        if reply.get("id") != rid:  # pragma: no cover - one request at a time: a server bug
            self._lose(f"the kernel server answered request {reply.get('id')!r}, not {rid}")
        return reply

    def _recv(self, timeout: float) -> dict[str, Any] | None:
        """The next reply; ``None`` at EOF.

        :raises TimeoutError: if none comes within ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        while not select.select([self.control], [], [], min(STOPPED_CHECK_S, max(0.0, deadline - time.monotonic())))[0]:
            if time.monotonic() >= deadline:
                raise TimeoutError(f"no reply within {timeout} s")
            state = read_stat(self.pid) or [b""]
            if state[0] in (b"T", b"t"):  # a start waited the whole 10 s for it
                raise TimeoutError("it is stopped (SIGSTOP, a debugger)")
        data = self.control.recv(65536)
        return json.loads(data.decode("utf-8")) if data else None

    def _lose(self, why: str) -> None:
        self.gone = why
        self.close()
        raise KernelServerUnavailable(why)

    def close(self) -> None:
        """End the server's lease; it exits at once (its kernels live on their own leases).

        What it adopted as a subreaper (a process a kernel's cells started in a session and an
        environment of its own, which outlived its kernel) would then be init's, unseen by the leak
        check: it is noted first (:func:`~..procs.note_left_behind`), so the check lists it."""
        if self.proc.poll() is None:
            self._note_adopted()
        self.gone = self.gone or "closed"
        try:
            self.control.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        remove_tree(self.dir)


    def _note_adopted(self) -> None:
        adopted = []
        for child in children(self.pid):
            if child.pid in self.forked:
                continue
            try:
                if child.environ().get("HERMES_KERNEL_ID", "").startswith(SERVER_KERNEL_ID_PREFIX):
                    continue  # its spare (kernel/runner/spare.py): the server's, it ends with it
                adopted.append((child.pid, start_ticks(child.pid), " ".join(child.cmdline())[:160]))
            except psutil.Error:
                continue
        if adopted:
            note_left_behind(adopted, "?")  # whose kernel it was is not known (as remotely)


#: Lines of ``/proc/self/status`` (and the calling thread's) a spawned runner inherits from us.
_STATUS_LINES = (("self", "Umask:"), ("self", "SigIgn:"), ("thread-self", "SigBlk:"))


def inherited_state() -> tuple[Any, ...]:
    """What a process started now inherits from this one besides its environment and cwd: umask,
    ignored signals, the calling thread's signal mask, rlimits, nice value, CPU affinity,
    ``oom_score_adj`` and cgroups. A server is forked kernels' parent: it is one per such state,
    so a kernel started after a test changed one (``os.umask(0o077)``, ``setrlimit``) has it as a
    spawned runner would (it kept those of the host when its server started)."""
    state: list[Any] = []
    for proc, name in _STATUS_LINES:
        state.append(_read_field(f"/proc/{proc}/status", name))
    for path in ("/proc/self/oom_score_adj", "/proc/self/cgroup"):
        state.append(_read_field(path, ""))
    state.extend(resource.getrlimit(getattr(resource, n)) for n in sorted(dir(resource)) if n.startswith("RLIMIT_"))
    try:
        state.append((os.getpriority(os.PRIO_PROCESS, 0), tuple(sorted(os.sched_getaffinity(0)))))
    except OSError:
        pass
    return tuple(state)


def _read_field(path: str, name: str) -> str | None:
    """The line of ``path`` that starts with ``name`` (``""``: the whole file); ``None`` if unreadable."""
    try:
        with open(path, encoding="ascii", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return None
    if not name:
        return text
    return next((line for line in text.splitlines() if line.startswith(name)), None)


class LocalServers:
    """A transport's kernel servers (see module docstring).

    :param root: where server dirs are made (the kernel dir root).
    :param max_servers: servers kept at once (one per interpreter and launch environment).
    :param idle_timeout: seconds a server without requests and kernels lives on.
    """

    def __init__(self, root: str, max_servers: int = DEFAULT_MAX_SERVERS,
                 idle_timeout: float | None = DEFAULT_SERVER_IDLE_TIMEOUT_S) -> None:
        self.root = root
        self.max_servers = max(1, max_servers)
        self.idle_timeout = idle_timeout
        self._servers: collections.OrderedDict[tuple[Any, ...], LocalServer] = collections.OrderedDict()
        self._retired: list[LocalServer] = []  # stale ones still serving their kernels' status
        self._lock = threading.Lock()
        self._owner = os.getpid()
        # A transport nobody closed still ends its servers when it is collected or at exit,
        # never leaving their lease sockets to the garbage collector.
        self._finalizer = weakref.finalize(self, _close_servers, self._servers, self._retired, self._lock)

    def spawn(self, python: str, env: dict[str, str], config: dict[str, Any], channel: socket.socket) -> tuple[int, LocalServer]:
        """A kernel forked by the server for ``(python, env)``; a server found gone is replaced once.

        :returns: the kernel's pid and the server that forked it.
        :raises KernelServerUnavailable: if no server could fork it.
        """
        key = (python, tuple(sorted(env.items())), inherited_state())
        server = self._server(key, python, env)
        try:
            return server.spawn(config, channel), server
        except KernelServerUnavailable:
            if not (server.gone or server.retired):
                raise  # a refusal: a new server would refuse too
        server = self._server(key, python, env)
        return server.spawn(config, channel), server

    def _server(self, key: tuple[Any, ...], python: str, env: dict[str, str]) -> LocalServer:
        with self._lock:
            if self._owner != os.getpid():  # a forked copy of the host: those servers are the parent's
                self._servers.clear()
                self._retired.clear()
                self._owner = os.getpid()
            ended = [old for old in self._retired if not old.usable]
            self._retired[:] = [old for old in self._retired if old.usable]
            server = self._servers.get(key)
            if server is not None and server.usable and not server.retired:
                self._servers.move_to_end(key)
                return server
            if server is not None:
                del self._servers[key]
                if server.retired and server.usable:
                    self._retired.append(server)
                else:
                    ended.append(server)
            server = LocalServer(python, env, self.root, self.idle_timeout)
            self._servers[key] = server
            evicted = [self._servers.popitem(last=False)[1] for _ in range(len(self._servers) - self.max_servers)]
        for old in evicted + ended:
            old.close()
        return server

    def pids(self) -> list[int]:
        """Pids of the servers that may be running."""
        with self._lock:
            return [s.pid for s in [*self._servers.values(), *self._retired] if s.usable]

    def close(self) -> None:
        """Close every server (their kernels live on, each on its own lease)."""
        _close_servers(self._servers, self._retired, self._lock)


def _close_servers(servers: collections.OrderedDict[tuple[Any, ...], LocalServer], retired: list[LocalServer],
                   lock: threading.Lock) -> None:
    """Close and forget ``servers`` and the ``retired``; only those this process started (a fork holds copies)."""
    with lock:
        mine = [server for server in [*servers.values(), *retired] if server.owner == os.getpid()]
        servers.clear()
        retired.clear()
    for server in mine:
        server.close()
