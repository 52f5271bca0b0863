"""The supervisor's side of its worker: fork it, signal its process group, reap it; and the forked
child's way to its first cell (:func:`worker_main`: set up, claimed if it is a spare's, the kernel's
cgroup, cwd and environment entered).

The worker's pid is its process group id (set by the supervisor right after the fork, and by the
worker itself: whichever runs first, as a shell does for its jobs), so a signal to the
group also reaches what its cells started, even one sent the moment the fork returned; :func:`.procfs.kill_session_strays` covers the ones
that left the group. ``waitpid`` gives the exact exit code or signal of every worker.
B29: ``pid`` is set only while the worker is unreaped; :meth:`WorkerProcess.reap` ends the group first.
"""

from __future__ import annotations

import errno
import os
import select
import selectors
import signal
import socket
import sys
import time

from .environ import become_worker, enter_kernel_env, finalize_and_exit, join_cgroup
from .frames import FrameDecoder, encode_frame, send_all
from .kick import Kicks, install_kick_handler
from .procfs import (
    cgroup_strangers,
    close_fds_except,
    configured_oom_file,
    kill_session_strays,
    memory_cgroup_oom_file,
    print_exc_quietly,
)
from .tools import install_tools_module
from .worker import START_FAILED, Worker

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Literal

    from .frames import Header

    #: How :meth:`WorkerProcess.stop` ended the worker.
    StopStep = Literal["already-exited", "request", "sigterm", "sigkill"]
    #: ``(exit_code, signal)`` of an ended worker; a signal death has exit code 128 + signal.
    WorkerExit = tuple[int | None, int | None]

#: Seconds to wait for a worker after SIGKILL (it cannot refuse; only a D-state process delays it).
KILL_WAIT_S = 5.0
#: Poll interval (seconds) while waiting for a worker to exit.
_REAP_POLL_S = 0.005


class WorkerProcess:
    """The current worker (at most one) and what became of the last one.

    :param config: the runner config (``cgroup_procs``: a ``cgroup.procs`` file the worker
        joins; the rest is handed to the worker).
    :param sel: the supervisor's selector; the worker's socket is registered as ``"worker"``.
    :param write_ends: the output pipes' write ends, the worker's fd 1 and 2.
    """

    def __init__(self, config: dict[str, Any], sel: selectors.BaseSelector, write_ends: tuple[int, int]) -> None:
        self.config = config
        self.sel = sel
        self.write_ends = write_ends
        self.pid: int | None = None
        self.sock: socket.socket | None = None
        self.decoder = FrameDecoder()
        self.exit: WorkerExit | None = None  # of the last worker that ended
        self.generation = 0
        self.oom_file: str | None = configured_oom_file(config)
        #: The counter is a cgroup's of the kernel's own (hermes_oom's on local; a fresh docker container's,
        #: ``cgroup_own``), not the one its worker was found in (a container's or the machine's, shared).
        self.oom_file_own = self.oom_file is not None or bool(config.get("cgroup_own"))
        self.kicks = Kicks()  # due after the last SIGINT (:mod:`.kick`)
        #: Reads the output pipes while :meth:`wait` waits (the supervisor sets it): an exiting
        #: worker's atexit or threads may write more than a pipe holds, and block until it is read.
        self.drain: Callable[[], None] = lambda: None

    def start(self, close_in_child: Callable[[], None],
              claim: Callable[[socket.socket], dict[str, Any]] | None = None) -> int:
        """Fork a fresh worker; return its pid.

        :param close_in_child: closes the supervisor's own fds and sockets in the child (the
            rest are closed by number, so the worker holds nothing of the supervisor's).
        :param claim: a spare's worker (:mod:`.spare`): called in the child on its socket, it
            waits for the kernel's config and returns it (it never returns without one).
        :raises OSError: if no worker can be made (no fd for its socket, the fork refused); nothing
            of it is left open.
        """
        parent, child = socket.socketpair()
        try:
            pid = os.fork()
        except OSError:
            parent.close()
            child.close()
            raise
        if pid == 0:
            parent.close()
            close_in_child()
            self._enter_child(child, claim)
        _own_group(pid)
        child.close()
        parent.setblocking(False)
        self.pid, self.sock, self.decoder = pid, parent, FrameDecoder()
        self.generation += 1
        self.sel.register(parent, selectors.EVENT_READ, "worker")
        if self.oom_file is None:
            self.oom_file = memory_cgroup_oom_file(pid) or ""
        return pid

    def counter_is_own(self) -> bool:
        """Whether the OOM counter counts this kernel's processes alone, now: a fresh container's
        (``cgroup_own``: the transport's word), or a cgroup its config names that holds no process
        outside this runner's session. Two kernels started in one memory cgroup (one ``cgroup_procs``)
        share its counter: a quiet cell of one was told that a subprocess of it was OOM-killed, for
        the other's (read only once the counter rose: it costs a ``/proc`` read per process there)."""
        if not self.oom_file_own or self.config.get("cgroup_own") or not self.oom_file:
            return self.oom_file_own
        return not cgroup_strangers(os.path.dirname(self.oom_file))

    def _enter_child(self, child: socket.socket, claim: Callable[[socket.socket], dict[str, Any]] | None) -> None:
        _own_group(0)
        out_w, err_w = self.write_ends
        close_fds_except({0, 1, 2, child.fileno(), out_w, err_w})
        worker_main(child, out_w, err_w, self.config, claim)

    def send(self, header: Header) -> bool:
        """Send one frame to the worker; ``False`` when it is gone or dying."""
        if self.sock is None:
            return False
        try:
            send_all(self.sock, encode_frame(header))
        except OSError:
            return False
        return True

    def signal_group(self, sig: int) -> None:
        """Send ``sig`` to the worker's process group, and to the worker alone when it is not in
        that group any more (a cell's ``os.setpgid``: a restart left such a worker running and
        said ``reset``) or the group refused it (no member the supervisor may signal).

        The worker is an unreaped child: its pid cannot be reused meanwhile (B29). A SIGINT is
        followed by kicks (:mod:`.kick`: one the worker took just before a blocking call counts).
        """
        if self.pid is None:
            return
        if sig == signal.SIGINT:
            self.kicks.after_sigint()
        # a worker its cell stopped (SIGSTOP, SIGTSTP) takes an interrupt once it runs again (it never
        # did: the ladder killed it, state lost, "the interrupt was ineffective")
        stopped = sig == signal.SIGINT and _stopped(self.pid)
        try:
            os.killpg(self.pid, sig)
            alone = os.getpgid(self.pid) != self.pid
        except (ProcessLookupError, PermissionError):  # the group is empty, or none of it is ours
            alone = True
        try:
            if alone:
                os.kill(self.pid, sig)
            if stopped:
                os.kill(self.pid, signal.SIGCONT)
        except (ProcessLookupError, PermissionError):
            pass

    def wait(self, timeout: float) -> WorkerExit | None:
        """Reap the worker within ``timeout`` seconds.

        :returns: its ``(exit_code, signal)`` (the last one's when none runs), or ``None`` if it
            is still alive at the deadline.
        """
        deadline = time.monotonic() + timeout
        while self.pid is not None:
            info = self.reap()
            if info is not None:
                return info
            if time.monotonic() >= deadline:
                return None
            self.drain()
            _until_exit(self.pid, min(_REAP_POLL_S, max(0.0, deadline - time.monotonic())))
        return self.exit

    def reap(self) -> WorkerExit | None:
        """Reap the worker if it exited (else ``None``), SIGKILLing its group first (its zombie holds the id)."""
        pid = self.pid
        if pid is None:
            return self.exit
        try:
            if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
                return None
            self.signal_group(signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        except ChildProcessError:
            return self.gone(None)
        return self.gone(status)

    def gone(self, status: int | None) -> WorkerExit:
        """Record the reaped worker's end from its wait ``status``; kill what its cells left behind."""
        if status is None:
            info: WorkerExit = (None, None)
        elif os.WIFSIGNALED(status):
            info = (128 + os.WTERMSIG(status), os.WTERMSIG(status))
        else:
            info = (os.WEXITSTATUS(status), None)
        self.pid = None
        kill_session_strays()
        if self.sock is not None:
            self.sel.unregister(self.sock)
            self.sock.close()
            self.sock = None
        self.exit = info
        return info

    def stop(self, grace: float, cell_running: bool) -> StopStep:
        """End the worker: exit request (only between cells) -> SIGTERM -> SIGKILL.

        :param grace: seconds each of the first two steps may take.
        :param cell_running: a cell runs, so the worker cannot read a request.
        :returns: the step that ended it.
        """
        if self.pid is None or self.reap() is not None:  # dead before, or found dead now (not yet seen)
            return "already-exited"
        steps = (("request", None), ("sigterm", signal.SIGTERM), ("sigkill", signal.SIGKILL))
        for step, sig in steps:
            if sig is None:
                if cell_running or not self.send({"type": "exit"}):
                    continue
            else:
                self.signal_group(sig)
            if self.wait(grace if sig != signal.SIGKILL else KILL_WAIT_S) is not None:
                return step  # type: ignore[return-value]
        return "sigkill"


def no_worker_because(exc: OSError) -> str:
    """Why no worker could be made, for the host: ``exc`` and, where it says so, what this
    kernel's host ran short of and what to do (the kernel and its state are gone; the next cell
    tries again)."""
    hint = {errno.EAGAIN: "this kernel's host has run out of processes (ulimit -u, a pids cgroup: a container's "
                          "--pids-limit)", errno.ENOMEM: "this kernel's host has run out of memory",
            errno.EMFILE: "the kernel runner has run out of file descriptors (ulimit -n)",
            errno.ENFILE: "this kernel's host has run out of file descriptors (fs.file-max)"}.get(exc.errno or 0)
    text = f"could not fork a new worker: {exc}"
    return f"{text} ({hint}: end processes there, or raise the limit; the next cell tries again)" if hint else text


def _own_group(pid: int) -> None:
    """Make worker ``pid`` (``0``: this process) the leader of its own process group.

    Both sides call it (POSIX job control's recipe): a ``killpg`` sent right after the fork, before
    the child ran at all, would otherwise find no such group and miss the worker (a ``restart()``
    right after the start left the old worker running, measured). ``EACCES``/``ESRCH``: the child
    already did it, or is gone.
    """
    try:
        os.setpgid(pid, 0)
    except (PermissionError, ProcessLookupError):
        pass


def _until_exit(pid: int, seconds: float) -> None:
    """Sleep ``seconds``, or less when child ``pid`` exits first (its pidfd turns readable; Linux
    5.3+): a worker asked to exit was reaped up to one poll interval late, a shutdown and a restart
    each paid about 5 ms more. Where pidfds are missing, a plain sleep."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        time.sleep(seconds)
        return
    try:
        select.select([fd], [], [], seconds)
    finally:
        os.close(fd)


def _stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped by a signal (state ``T`` in its ``/proc`` stat)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] == b"T"
    except (OSError, IndexError):
        return False


#: The worker of this process, once :func:`worker_main` made it (a cell's ``os.fork()`` child closes its channel).
_WORKER: Worker | None = None


def _close_channel_in_fork_child() -> None:
    worker = _WORKER
    if worker is not None and os.getpid() != worker.pid:
        try:
            worker.sock.close()
        except OSError:
            pass


def worker_main(sock: socket.socket, out_w: int, err_w: int, config: dict[str, Any],
                claim: Callable[[socket.socket], dict[str, Any]] | None = None) -> None:
    """Entry point of a freshly forked worker: set it up, run cells, exit. Never returns.

    :param sock: the worker's end of the socketpair to the supervisor.
    :param out_w: write end of the stdout pipe (becomes fd 1).
    :param err_w: write end of the stderr pipe (becomes fd 2).
    :param config: the runner config.
    :param claim: a spare's worker (:mod:`.spare`): called on ``sock`` once the worker is set up as far
        as no config is needed, it waits for the kernel's config and returns it; then the cgroup,
        cwd and environment are the kernel's, as for a worker forked for it (which joins its cgroup first).
    """
    global _WORKER
    code = 0
    try:
        signal.set_wakeup_fd(-1)  # the supervisor's, closed: its number may be a file's once this opens any
        if claim is None:
            join_cgroup(config, err_w)
        worker = Worker(sock, config)
        sys.modules["__main__"] = worker.main  # (a cell's functions and classes pickle: a pool can map them)
        # Python's own handler, as cells see it, is the worker's: one a cell set let a late SIGINT end it
        signal.default_int_handler = handler = worker.on_sigint  # type: ignore[assignment]
        signal.signal(signal.SIGINT, handler)
        become_worker(out_w, err_w)
        install_kick_handler()  # the supervisor's kicks after a SIGINT: one taken just before a blocking call counts
        _WORKER = worker
        install_tools_module(worker)
        os.register_at_fork(after_in_child=_close_channel_in_fork_child)
        if claim is not None:
            worker.take_config(config := claim(sock))
            join_cgroup(config, 2)  # (err_w is fd 2 now)
        enter_kernel_env(config)
        if worker.loop():  # asked to exit (a shutdown's request): as an interpreter ends, its threads not waited for
            finalize_and_exit(0, worker.namespace, join_threads=False)
    except BaseException:  # noqa: BLE001 - report on the inherited stderr and leave
        code = START_FAILED
        print_exc_quietly()
    finally:
        os._exit(code)
