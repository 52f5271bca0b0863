"""``server --fd N``: the kernel server, a long-lived runner process that forks fresh kernels.

The host starts one per (interpreter, launch environment) and asks it for kernels instead of
starting a runner each time (DESIGN.md section 2: an optimisation, never a semantic change). The
server has the whole runner imported, holds no threads and nothing of any kernel; asked for a
kernel it forks, and the child becomes that kernel's supervisor exactly as ``serve --fd`` would:
a new session (own process group), stdin on ``/dev/null``, its output on the kernel dir's
log, only the kernel's channel open, ``random`` reseeded, its cwd, and then the worker forked from
it applies the kernel's environment (:mod:`.environ`). What forked kernels do share with the
server and each other is read-only: the imported code's pages, and the string hash seed
(``PYTHONHASHSEED`` is fixed once, when the server's interpreter starts).

The control socket ``N`` is a ``SOCK_SEQPACKET`` socketpair with the host; each message is one
JSON object, and a ``spawn`` carries the kernel's channel socket (``SCM_RIGHTS``)::

    host -> server  {"type": "spawn", "id": n, "config": {...runner config...}}  + 1 fd
    server -> host  {"type": "spawned", "id": n, "pid": p} | {"type": "error", "id": n, "error": why}
                    (``"stale": true`` in the error: a site dir changed since the server started;
                    the host starts a new server and sends this one no more spawns)
    host -> server  {"type": "ping", "id": n}   ->   {"type": "pong", "id": n, "pid": ...}
    host -> server  {"type": "status", "id": n, "pid": p}  ->  {"type": "status", "id": n, "exit_code": c}
                    (``c``: how kernel ``p`` ended, as ``Popen.returncode`` says it, ``-N`` for signal
                    ``N``; ``None`` while it runs or was not reaped yet)

After a spawn, once no request waits, a server (this one, and a container's or ssh host's:
:mod:`.server_remote`) forks the next kernel ahead, its *spare* (:mod:`.spare`), and the next
spawn takes it: the same kernel, its fork and first steps done.

The control socket is the server's lease: at EOF (the host died, by any means, or is done with
it) the server exits at once. Its kernels do not depend on it: each holds its own channel, which
is its own lease. With no request for ``idle_timeout`` seconds (server config, on stdin) and no
kernel of its own alive, the server exits by itself.

Every kernel process must carry ``HERMES_KERNEL_ID`` in ``/proc/<pid>/environ`` (the leak probes
and the failed-launch kill find kernels by it), which shows a process's *initial* environment:
a forked child would show the server's. So the server starts with a placeholder value
(:data:`.environ.SERVER_KERNEL_ID`) and each child writes its kernel id over it, in place, in its
own copy of that memory (``/proc/self/mem``). A host that does not allow that gets refusals, and
the transport falls back to a plain spawn.
"""

from __future__ import annotations

import gc
import json
import os
import select
import selectors
import signal
import socket
import sys
import time

from .attach import recv_fds
from .capture import set_nonblocking
from .environ import KERNEL_ID_NAME
from .procfs import become_subreaper, close_fds_except, print_exc_quietly
from .renamed_trees import remove_renamed  # noqa: F401 (a forked local kernel's shutdown removes its dir with it: loaded
# here once, as trees is, not imported by each kernel at its shutdown: +0.5 ms a start and stop, measured)
from .serve import cgroup_problem, read_config, run_on_channel
from .sites import site_changed
from .spare import Spare, fork_spare
from .stamp import id_refusal, redirect_stdio, stamp_kernel_id, stamp_refusal
from .trees import remove_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: Largest control message (bytes): a runner config with a large kernel environment.
MAX_MESSAGE_BYTES = 4 << 20
#: Exit codes of reaped kernels the local server keeps for ``status`` requests.
MAX_EXITS_KEPT = 256
#: Exit status of a forked kernel whose own setup failed (EX_SOFTWARE, as a worker's).
SETUP_FAILED = 70
#: Seconds the server waits for a forked kernel to mark its environment (it answers the host after).
STAMP_WAIT_S = 5.0
_stamped_w: list[int] = []  # in a forked kernel: the pipe its server waits on


def serve_server_fd(fd: int) -> None:
    """Run the kernel server on the inherited control socket ``fd`` until its lease ends."""
    config = read_config()
    become_subreaper()
    KernelServer(socket.socket(fileno=fd), config).run()


class ForkingServer:
    """What every kernel server does: fork kernels, reap them, end when idle (see module docstring).

    Subclasses register their sources on :attr:`sel` and handle them in :meth:`on_ready`.

    :param config: ``idle_timeout`` (seconds; ``None``: none), ``server_dir`` (removed at exit),
        ``spare`` (default true; false: no spare kernel, for a kernel host under a memory limit,
        where the spare's pages would count against the kernels').
    """

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.idle_timeout: float | None = config.get("idle_timeout")
        self.sel = selectors.DefaultSelector()
        self.wake_r, self.wake_w = os.pipe()
        for fd in (self.wake_r, self.wake_w):
            set_nonblocking(fd)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the selector through the wakeup fd
        for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")
        self.children: set[int] = set()
        self.refusal = stamp_refusal()
        self.last_request = time.monotonic()
        self.stopping = False
        self.spare: Spare | None = None  # a kernel forked ahead (:mod:`.spare`)
        self.spares = bool(config.get("spare", True))
        self.spare_wanted = False  # set by each spawn: the next spare is forked once no request waits
        self.pending: Any = None  # the source whose waiting request defers the next spare

    def _on_sigterm(self, *_: object) -> None:
        self.stopping = True

    def run(self) -> None:
        """Serve until the lease ends, SIGTERM, or the idle timeout."""
        gc.collect()
        gc.freeze()  # what the server made is never scanned again: forked kernels keep sharing its pages
        try:
            while not self.stopping:
                timeout = self._idle_left()
                if timeout == 0.0:
                    break
                for key, _ in self.sel.select(timeout):
                    if key.data == "wake":
                        self.reap()
                    elif key.data == "spare":  # it ended (or spoke out of turn) before a claim
                        self.drop_spare()
                    else:
                        self.on_ready(key.data, key.fileobj)
                self.between_requests()
        finally:
            if self.config.get("server_dir"):
                remove_tree(self.config["server_dir"])

    def on_ready(self, what: Any, source: Any) -> None:
        """A registered source other than the wakeup pipe is readable."""
        raise NotImplementedError

    def between_requests(self) -> None:
        """After each wake-up's requests are answered: fork the next spare if a spawn asked for
        one and no request waits on :attr:`pending`."""
        if not (self.spare_wanted and self.spares) or self.stopping or select.select([self.pending], [], [], 0)[0]:
            return
        self.spare_wanted = False
        if self.spare is None and not site_changed():
            try:
                self.spare = fork_spare(self.close_in_child)
            except OSError:
                return  # no spare: the next spawn forks as before
            self.sel.register(self.spare.sock, selectors.EVENT_READ, "spare")

    def drop_spare(self) -> None:
        """End the spare (it died, or spoke out of turn): the next spawn forks, then makes another."""
        spare, self.spare = self.spare, None
        if spare is not None:
            self.sel.unregister(spare.sock)
            spare.drop()

    def retire(self) -> None:
        """No spawn will come any more (the host was told to start a new server): end the spare, and
        make no other (it lingered beside the retired server until that idled out)."""
        self.spares = False
        self.drop_spare()

    def from_spare(self, config: dict[str, Any], fd: int) -> int | None:
        """The pid of the spare made kernel ``config``'s on ``fd`` (its channel; a remote kernel's
        listening socket) (``None``: no spare, or it failed before it could touch ``fd``: fork the
        kernel). Asks for the next spare.

        :raises OSError: if it failed after it may have (it went silent: the host spawns instead)."""
        self.spare_wanted = True
        spare, self.spare = self.spare, None
        if spare is None:
            return None
        self.sel.unregister(spare.sock)
        why, clean = spare.claim(config, fd, MAX_MESSAGE_BYTES)
        if why is not None:
            spare.drop()
            if not clean:
                raise OSError(f"the spare kernel's claim failed ({why})")
            return None
        spare.sock.close()
        self.children.add(spare.pid)
        return spare.pid

    def _idle_left(self) -> float | None:
        if self.idle_timeout is None:
            return None
        if self.children:
            self.reap()
        if self.children:
            return float(self.idle_timeout)  # a kernel of ours lives: we stay to reap it
        return max(0.0, self.last_request + float(self.idle_timeout) - time.monotonic())

    def refuse(self, config: dict[str, Any]) -> str | None:
        """Why a kernel with runner ``config`` cannot be forked here (``None``: it can)."""
        return self.refusal or id_refusal(config.get("kernel_id"))

    def stale(self, rid: Any) -> dict[str, Any] | None:
        """The refusal of a spawn once a site dir changed since this server started
        (:func:`site_changed`): ``stale`` asks the host to start a new server for the kernel (one
        interpreter start, as each kernel forked here would now pay in :func:`exec_fresh`) and to
        send this one no more spawns; it serves the kernels it has until they end, then idles out.
        Its spare goes at once, and no other is made: no spawn will take one (it lingered with the
        retired server)."""
        if not site_changed():
            return None
        self.retire()
        return {"type": "error", "id": rid, "stale": True,
                "error": "a site dir changed since the kernel server started: start a new server"}

    def fork(self, child: Callable[[], None]) -> int:
        """Fork; the child closes the server's own fds and runs ``child`` (which never returns).

        :raises OSError: if the fork fails.
        """
        stamped_r, stamped_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(stamped_r)
            os.close(stamped_w)
            raise
        if pid == 0:
            signal.set_wakeup_fd(-1)
            os.close(stamped_r)
            _stamped_w[:] = [stamped_w]
            self.close_in_child()
            child()
            os._exit(SETUP_FAILED)  # pragma: no cover - child() never returns
        self.children.add(pid)
        os.close(stamped_w)
        try:  # its kernel id in /proc/<pid>/environ before anyone hears of it: a host whose server went right
            select.select([stamped_r], [], [], STAMP_WAIT_S)  # after this fork found no process of that kernel
        finally:  # to end, and the unmarked child lived on (its orphan timer); EOF: the child is gone
            os.close(stamped_r)
        return pid

    def close_in_child(self) -> None:
        """Close the server's fds in a forked child (subclasses close their own sources too)."""
        self.sel.close()
        for fd in (self.wake_r, self.wake_w):
            os.close(fd)
        if self.spare is not None:  # a kernel holding it would keep the spare alive past the server's end
            self.spare.sock.close()

    def reap(self) -> None:
        """Collect exited kernels (and drain the wakeup pipe); :meth:`on_exit` for each. Also
        collects what a subreaper (:func:`become_subreaper`) adopted, which is no kernel."""
        try:
            while os.read(self.wake_r, 512):
                pass
        except OSError:
            pass
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.children.clear()
                return
            if not pid:
                return
            if pid in self.children:
                self.children.discard(pid)
                self.on_exit(pid, status)

    def on_exit(self, pid: int, status: int) -> None:
        """Kernel ``pid`` ended with wait ``status`` (nothing to do by default)."""


class KernelServer(ForkingServer):
    """The local kernel server: requests on a control socket (see module docstring).

    :param control: the ``SOCK_SEQPACKET`` control socket to the host.
    :param config: see :class:`ForkingServer`.
    """

    def __init__(self, control: socket.socket, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.control = control
        self.exits: dict[int, int] = {}  # pid -> exit code of recently reaped kernels
        self.sel.register(control, selectors.EVENT_READ, "control")
        self.pending = control  # a request waiting here defers the next spare

    def on_ready(self, what: Any, source: Any) -> None:
        self.on_control()

    def on_control(self) -> None:
        """Answer one host message (EOF: the lease ended)."""
        try:
            msg, fds = recv_fds(self.control, MAX_MESSAGE_BYTES, 4)
        except OSError:
            msg, fds = b"", []
        try:
            if not msg:
                self.stopping = True
                return
            self.last_request = time.monotonic()
            reply = self.answer(msg, fds)
            try:
                self.control.send(json.dumps(reply).encode("utf-8"))
            except OSError:
                self.stopping = True
        finally:
            for fd in fds:
                os.close(fd)

    def answer(self, msg: bytes, fds: list[int]) -> dict[str, Any]:
        """The reply to one request (a ``spawn`` forks a kernel on ``fds[0]``)."""
        try:
            request = json.loads(msg.decode("utf-8"))
        except ValueError as exc:
            return {"type": "error", "id": None, "error": f"bad request: {exc}"}
        rid, kind = request.get("id"), request.get("type")
        if kind == "ping":
            return {"type": "pong", "id": rid, "pid": os.getpid(), "kernels": len(self.children)}
        if kind == "status":
            self.reap()
            return {"type": "status", "id": rid, "exit_code": self.exits.get(request.get("pid"))}
        if kind != "spawn" or len(fds) != 1 or not isinstance(request.get("config"), dict):
            return {"type": "error", "id": rid, "error": f"bad request {kind!r} with {len(fds)} fds"}
        config, fd = request["config"], fds[0]
        stale = self.stale(rid)
        if stale:
            return stale
        why = self.refuse(config)
        if why:
            return {"type": "error", "id": rid, "error": why}
        try:
            pid = self.from_spare(config, fd)
        except OSError as exc:
            return {"type": "error", "id": rid, "error": str(exc)}
        if pid is None:
            try:
                pid = self.fork(lambda: become_kernel(config, fd))
            except OSError as exc:
                return {"type": "error", "id": rid, "error": f"fork failed: {exc}"}
        return {"type": "spawned", "id": rid, "pid": pid}

    def on_exit(self, pid: int, status: int) -> None:
        self.exits[pid] = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        while len(self.exits) > MAX_EXITS_KEPT:
            del self.exits[next(iter(self.exits))]

    def close_in_child(self) -> None:
        super().close_in_child()
        self.control.close()


def become_kernel(config: dict[str, Any], fd: int) -> None:
    """In a freshly forked child: become the supervisor of a new kernel on channel ``fd``. Never returns."""
    enter_kernel(config, fd, lambda: run_on_channel(config, socket.socket(fileno=fd)), ("serve", "--fd"))


def exec_fresh(config: dict[str, Any], keep_fd: int, mode: tuple[str, ...]) -> None:
    """Replace this forked kernel by a fresh interpreter running the runner's ``mode`` on
    ``keep_fd`` with ``config`` on stdin (a spawned runner: same pid, session, fds and log), for
    a site dir changed since the server started (a ``.pth`` file, a user site dir made since: what
    the server's ``sys.path`` does not have). Never returns.

    :raises OSError: if it cannot be executed.
    """
    data = json.dumps(config).encode("utf-8")
    fd = os.memfd_create("hermes-kernel-config")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    os.dup2(fd, 0)
    os.close(fd)
    os.set_inheritable(keep_fd, True)
    env = dict(os.environ, **{KERNEL_ID_NAME: str(config["kernel_id"])})
    os.execve(sys.executable, [sys.executable, "-B", sys.argv[0], *mode, str(keep_fd)], env)


def enter_kernel(config: dict[str, Any], keep_fd: int, serve: Callable[[], None], mode: tuple[str, ...]) -> None:
    """In a freshly forked child: become a fresh kernel's process, then ``serve``. Never returns.

    New session, only ``keep_fd`` (and stdio) open, stdin and stdout on ``/dev/null`` and stderr
    on the kernel's log (as a spawned runner has them), the kernel id in ``/proc/self/environ``,
    ``random`` reseeded, cwd as a spawned runner's. Where a site dir changed since the server
    started, the runner ``mode`` on ``keep_fd`` in a fresh interpreter instead (:func:`exec_fresh`).
    """
    code = 0
    try:
        os.setsid()
        redirect_stdio(config.get("log"))
        close_fds_except({0, 1, 2, keep_fd, *_stamped_w})
        stamp_kernel_id(str(config["kernel_id"]))
        for fd in _stamped_w:  # the server waits for this (see ForkingServer.fork)
            os.write(fd, b"1")
            os.close(fd)
        _stamped_w.clear()
        if "random" in sys.modules:
            sys.modules["random"].seed()  # never the server's (or a sibling's) sequence
        cwd = config.get("cwd") or config.get("kernel_dir") or "/"
        try:
            os.chdir(cwd)
        except OSError as exc:  # a user's cwd: one line naming it (the start error shows the log's tail)
            code = SETUP_FAILED
            print(f"hermes-kernel runner: cannot enter the working directory cwd={cwd!r}: {exc.strerror}",
                  file=sys.stderr, flush=True)
            return
        problem = cgroup_problem(config)
        if problem is not None:
            code = SETUP_FAILED
            print(problem, file=sys.stderr, flush=True)
            return
        if site_changed():
            try:
                exec_fresh(config, keep_fd, mode)
            except OSError as exc:  # no memfd, no interpreter to exec: the fork as before, stdin on /dev/null
                print(f"hermes-kernel runner: could not start afresh for a changed site dir: {exc}", file=sys.stderr)
                redirect_stdio(config.get("log"))
        serve()
    except BaseException:  # noqa: BLE001 - report in the kernel's log and leave
        code = SETUP_FAILED
        print_exc_quietly()
    finally:
        os._exit(code)
