"""The supervisor: owns the channel and the worker, never runs user code.

Process layout (one kernel)::

    host --channel--> supervisor --private socketpair--> worker (user code, own pgid)
                          ^  reads the worker's fd 1/2 pipes, bounded head + tail

Because it never runs user code, the supervisor stays responsive while a cell holds the GIL in
C code: it drains output (no pipe-buffer deadlock), delivers SIGINT to the worker's process
group, sees the worker die (``waitpid`` gives the exact exit code or signal), reads the memory
cgroup's OOM counter, forks a fresh worker on restart, and kills the worker's group when the host
goes away (channel EOF for local, the orphan timer for remote).

Its parts, each with the state it owns: :class:`.attach.ClientLink` (the host's side),
:class:`.worker_process.WorkerProcess` (the worker's process), :class:`.cells.CellBook` (the
running cell). This class wires them: one selector loop, the host's requests (``do_<type>``),
the worker's messages, and the end.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import sys

from .attach import ClientLink, bind_listener
from .capture import OutputPipes, set_nonblocking
from .cells import CellBook, bad_result
from .frames import PROTOCOL_VERSION, READ_CHUNK, FrameError
from .procfs import adopted_children
from .worker_process import KILL_WAIT_S, WorkerProcess, no_worker_because

TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Callable, Sequence
    from typing import Any

    from .frames import Header
    from .worker_process import WorkerExit

#: Default per-stream output cap (bytes) when the config names none (KernelOptions sends it).
DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024
#: Seconds a worker that said "exited" or was asked to stop may take before it is killed.
DEFAULT_EXIT_GRACE_S = 2.0
#: Seconds to wait for a worker that closed its socket to exit by itself.
EOF_WAIT_S = 1.0
#: Seconds one wait of the serve loop lasts at most; the loop then computes the orphan timer's time
#: left again. epoll takes at most INT_MAX ms (24.8 days): an orphan timer (or kept kernel's TTL)
#: longer than that raised OverflowError in the runner, which ended the kernel.
MAX_WAIT_S = 3600.0
_NO_CELL = ("No active cell: the cell this call belonged to has settled, so its tool authority "
            "is retired.")


class Supervisor:
    """One kernel's supervisor (see module docstring).

    :param config: the runner config (JSON from stdin): ``max_output_bytes``, ``orphan_timeout``
        (seconds, ``None``: no timer), ``token``, ``exit_grace`` (seconds), ``kernel_id``,
        ``kernel_dir``/``remove_kernel_dir``/``rename_kernel_dir``, ``oom_counter_file``, ``cgroup_procs``, ``cgroup_own``, ``listen``,
        and the kernel's environment for its workers (``env``, ``env_clear``, ``env_unset``: :mod:`.environ`).
    """

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = config
        self.orphan_timeout: float | None = config.get("orphan_timeout")
        self.exit_grace = float(config.get("exit_grace", DEFAULT_EXIT_GRACE_S))
        self.sel = selectors.DefaultSelector()
        self.stopping = False
        self.pipes = OutputPipes(int(config.get("max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES)))
        for fd in self.pipes.read_ends:
            self.sel.register(fd, selectors.EVENT_READ, "pipe")
        self.link = ClientLink(self.sel, config.get("token") or "")
        self.worker = WorkerProcess(config, self.sel, self.pipes.write_ends)
        self.cells = CellBook(self.pipes, self.worker)
        self.wake_r, self.wake_w = os.pipe()
        set_nonblocking(self.wake_r)
        set_nonblocking(self.wake_w)
        self._install_signals()
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")

    def _install_signals(self) -> None:
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the selector through the wakeup fd
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)

    def _on_sigterm(self, *_: object) -> None:
        self.stopping = True

    # ------------------------------------------------------------------------------ worker
    def start_worker(self, claim: Callable[[socket.socket], dict[str, Any]] | None = None) -> int:
        """Fork a fresh worker (:meth:`.WorkerProcess.start`, ``claim``: a spare's); its pid. Its OOM counter is opened now (same fds after cells)."""
        self.pipes.new_worker()  # what was said before is not its word
        pid = self.worker.start(self._close_in_child, claim)
        self.cells.oom_count()
        return pid

    def _close_in_child(self) -> None:
        for fd in (*self.pipes.read_ends, self.wake_r, self.wake_w):
            os.close(fd)
        self.link.close_in_child()
        self.sel.close()

    def reap_children(self) -> None:
        """Collect exited children (the worker, or orphans re-parented to us); the worker only
        through :meth:`.WorkerProcess.reap` (B29)."""
        while True:
            try:
                seen = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if seen is None:
                return
            if seen.si_pid != self.worker.pid:
                os.waitpid(seen.si_pid, 0)
                continue
            info = self.worker.reap()
            if info is not None and self.cells.cell is not None:
                self.finish_with_death(info)

    def finish(self, outcome: Header) -> None:
        """Settle the running cell with ``outcome`` and send its result (kept until acked)."""
        request_id, frame = self.cells.settle(outcome)
        self.link.keep_result(request_id, frame)

    def finish_with_death(self, info: WorkerExit) -> None:
        self.finish(self.cells.died(info))

    # ------------------------------------------------------------------------------ host
    def say_hello(self, replayed: Sequence[object] = ()) -> None:
        self.link.reply({"type": "hello", "proto": PROTOCOL_VERSION, "pid": os.getpid(), "python": sys.version.split()[0],
                         "worker_pid": self.worker.pid, "worker_exit": None if self.worker.pid else self.worker.exit,
                         "kernel_id": self.config.get("kernel_id"), "replayed": list(replayed),
                         "running": self.cells.running_id, "interrupts": self.cells.interrupts})

    def on_attach(self, replay: list[object], resend_tool_calls: bool) -> None:
        """A client authenticated: hello, the results it still waits for, then, for a host that
        re-attached after its stream broke, the running cell's tool calls nobody answered (one made
        while no client was attached, or sent as the stream dropped, was lost; the host runs a
        call id once, however often it comes)."""
        self.say_hello(replay)
        self.link.replay(replay)
        if resend_tool_calls:
            for call in self.cells.unanswered():
                self.link.reply(call)

    def on_message(self, msg: Header) -> None:
        kind = msg.get("type")
        handler = getattr(self, f"do_{kind}", None) if isinstance(kind, str) else None
        if handler is None:
            self.link.reply({"type": "error", "id": msg.get("id"), "error": f"unknown message {kind!r}"})
            return
        handler(msg)

    def do_execute(self, msg: Header) -> None:
        if self.cells.sent_again(msg, self.link.unacked):  # the result it waits for comes (came) as for the first
            return
        self.link.unacked.clear()  # a new request acknowledges every earlier result
        if self.cells.cell is not None:
            self.link.reply({"type": "error", "id": msg.get("id"), "error": "a cell is already running on this kernel"})
            return
        self.reap_children()  # a worker killed between cells is reported, not handed the cell
        if self.worker.pid is None:
            code, sig = self.worker.exit or (None, None)
            self.link.reply({"type": "result", "id": msg["id"], "status": "died", "not_run": True,
                             "exit_code": code, "signal": sig, "note": self.pipes.last_said(code)})
            return
        self.worker.send(self.cells.begin(msg))  # a dying worker: SIGCHLD finishes the cell

    def do_ack(self, msg: Header) -> None:
        self.link.unacked.pop(msg.get("id"), None)

    def do_interrupt(self, msg: Header) -> None:
        """SIGINT the worker's group for the running cell once the worker said it runs (held until
        then): one reaching the worker between cells is then always a late one, which it ignores (it
        cannot tell it from one whose handler ran late, a thread of the ended cell holding the GIL)."""
        if self.worker.pid is not None and self.cells.take_interrupt(msg):
            if self.cells.started:
                self.worker.signal_group(signal.SIGINT)
            else:
                self.cells.held = True

    def do_kill_worker(self, msg: Header) -> None:
        """SIGKILL the worker's group. A request naming a ``cell`` kills only while that cell
        runs: the watchdog's kill can cross the cell's own result on the stream (its interrupt
        ended it just after the grace), and killing the now idle worker would lose its namespace
        with nothing to report it."""
        if "cell" in msg and msg["cell"] != self.cells.running_id:
            self.link.reply({"type": "killed", "id": msg.get("id"), "exit_code": None, "signal": None,
                             "skipped": "the cell had ended"})
            return
        self.worker.signal_group(signal.SIGKILL)
        info = self.worker.wait(KILL_WAIT_S)
        if self.cells.cell is not None and info is not None:
            self.finish_with_death(info)
        self.link.reply({"type": "killed", "id": msg.get("id"), "exit_code": None if info is None else info[0],
                         "signal": None if info is None else info[1]})

    def do_start_worker(self, msg: Header) -> None:
        """A fresh worker for a host that saw the last one end; never the last one again: a
        worker SIGKILL did not end (uninterruptible sleep, a frozen cgroup) is refused, named."""
        self.reap_children()
        if self.worker.pid is not None:
            self.link.reply({"type": "worker", "id": msg.get("id"), "worker_pid": None,
                             "error": f"the old worker (pid {self.worker.pid}) did not end within {KILL_WAIT_S:g} s "
                                      "of SIGKILL (uninterruptible sleep? a frozen cgroup?); no new worker started"})
            return
        try:
            self.start_worker()
        except OSError as exc:  # the fork refused at a process limit: the runner lives on, asked again later
            self.link.reply({"type": "worker", "id": msg.get("id"), "worker_pid": None, "error": no_worker_because(exc)})
            return
        self.link.reply({"type": "worker", "id": msg.get("id"), "worker_pid": self.worker.pid})

    def do_ping(self, msg: Header) -> None:
        self.link.reply({"type": "pong", "id": msg.get("id"), "worker_pid": self.worker.pid,
                         "running": self.cells.running_id, "interrupts": self.cells.interrupts})

    def do_tool_result(self, msg: Header) -> None:
        self.cells.answered(msg.get("id"))
        self.worker.send(msg)

    def do_keep(self, msg: Header) -> None:
        """Outlive the host (a kernel kept for post-mortem): listen on ``listen`` when given (a
        local runner's channel is its lease until then) and make ``orphan_timeout`` (seconds) the
        orphan timer, so that a host that never comes back ends the kernel that much later."""
        path = msg.get("listen")
        if path and self.link.listener is None:
            self.config["listen"] = path  # unlinked at shutdown
            self.link.listen(bind_listener(str(path)))
        timeout = msg.get("orphan_timeout")
        self.orphan_timeout = None if timeout is None else float(timeout)
        self.link.reply({"type": "kept", "id": msg.get("id"), "listen": self.config.get("listen"),
                         "orphan_timeout": self.orphan_timeout})

    def do_shutdown(self, msg: Header) -> None:
        """End the worker by the ladder; ``bye`` (after a cut cell's result) lists what its cells left running."""
        step = self.worker.stop(float(msg.get("grace", DEFAULT_EXIT_GRACE_S)), self.cells.cell is not None)
        code, sig = self.worker.exit or (None, None)  # of the last worker (dead before, or just now)
        if self.worker.exit is not None and self.cells.cell is not None:
            self.finish_with_death(self.worker.exit)
        self.link.reply({"type": "bye", "id": msg.get("id"), "step": step, "exit_code": code, "signal": sig,
                         "leftovers": adopted_children(but=(self.worker.pid,))})
        self.stopping = True

    # ------------------------------------------------------------------------------ worker io
    def on_worker(self) -> None:
        sock = self.worker.sock
        try:
            data = sock.recv(READ_CHUNK)  # type: ignore[union-attr]
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.on_worker_eof()
            return
        self.worker.decoder.feed(data)
        while self.worker.sock is not None:
            try:
                frame = self.worker.decoder.next_frame()
            except FrameError as exc:
                _kill_worker_for(self, f"it sent bytes that are no frame on its channel (a cell can write to it: {exc})")
                return
            if frame is None:
                return
            self.on_worker_message(frame[0])

    def on_worker_message(self, msg: Header) -> None:
        kind = msg.get("type")
        running = self.cells.cell is not None
        if kind == "result" and running and msg.get("id") == self.cells.running_id:
            _take_result(self, msg)
        elif kind == "running" and running and msg.get("id") == self.cells.running_id:
            self.cells.started = True
            if self.cells.held:
                self.cells.held = False
                self.worker.signal_group(signal.SIGINT)
            if self.cells.cell.get("report_running"):  # type: ignore[union-attr]
                self.link.reply(msg)
        elif kind == "tool_call":
            _take_tool_call(self, msg)

    def _finish_exit(self, msg: Header) -> None:
        """The cell raised SystemExit: its result waits until the worker has really exited."""
        self.cells.exiting = msg
        if self.worker.wait(self.exit_grace) is None:
            self.worker.signal_group(signal.SIGKILL)
            msg["note"] = "forced kill after grace: the exiting kernel did not end"
            self.worker.wait(KILL_WAIT_S)
        if self.cells.cell is not None:
            self.finish_with_death(self.worker.exit)  # type: ignore[arg-type]

    def on_worker_eof(self) -> None:
        info = self.worker.wait(EOF_WAIT_S)
        if info is None:  # the worker closed its channel but lives on: it is unusable
            _kill_worker_for(self, "it closed its channel to the runner (a cell's os.close or os.closerange?) and lived on")
            info = self.worker.wait(KILL_WAIT_S)
        if self.cells.cell is not None and info is not None:
            self.finish_with_death(info)

    # ------------------------------------------------------------------------------ loop
    def run(self) -> None:
        """Serve until shutdown, SIGTERM, the host's lease ends or the orphan timer fires."""
        if self.worker.pid is None:
            self.start_worker()
        while not (self.stopping or self.link.lease_lost):
            timeout = self.link.orphan_timeout_left(self.orphan_timeout)
            if timeout == 0.0:
                break
            timeout = self.worker.kicks.timeout(MAX_WAIT_S if timeout is None else min(timeout, MAX_WAIT_S))
            for key, _ in self.sel.select(timeout):
                self._dispatch(key.data, key.fd)
            self.worker.kicks.send_due(self.worker.pid, self.cells.cell is not None)
        self.shutdown()

    def _dispatch(self, what: str, fd: int) -> None:
        if what == "pipe":
            self.cells.capture(fd)
        elif what == "chan" and self.link.attached:
            self.link.on_readable(self.on_attach, self.on_message)
        elif what == "worker" and self.worker.sock is not None:
            self.on_worker()
        elif what == "listen":
            self.link.accept()
        elif what == "wake":
            self.on_wake()

    def on_wake(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_r, 512):
                pass
        self.reap_children()

    def shutdown(self) -> None:
        """Kill the worker's group; remove the kernel dir (remote: the host may be gone) and socket."""
        self.worker.signal_group(signal.SIGKILL)
        self.worker.wait(KILL_WAIT_S)
        self.cells.close()
        _remove_kernel_dir(self.config)
        if self.link.listener is not None:
            try:
                os.unlink(self.config["listen"])
            except OSError:
                pass


def _remove_kernel_dir(config: dict[str, Any]) -> None:
    """Remove the config's ``kernel_dir`` unless ``remove_kernel_dir`` is false: the host may be gone,
    so leave nothing behind (a tree deeper than the recursion limit too); a local kernel dir
    (``rename_kernel_dir``) is renamed out of the kernel dirs' names first (a probe saw it without
    its host file). Imported only now: shutil's imports would slow every kernel's start."""
    kdir = config.get("kernel_dir")
    if not kdir or not config.get("remove_kernel_dir", True):
        return
    if config.get("rename_kernel_dir"):
        from .renamed_trees import remove_renamed as remove_tree
    else:
        from .trees import remove_tree
    remove_tree(kdir)


def _kill_worker_for(supervisor: Supervisor, why: str) -> None:
    """SIGKILL the worker's group, the running cell's death note saying ``why`` (it said only
    "killed by signal 9", as for the OOM killer or a kill from outside)."""
    if supervisor.cells.cell is not None:
        supervisor.cells.kill_note = f"the kernel runner killed the worker: {why}"
    supervisor.worker.signal_group(signal.SIGKILL)


def _take_result(supervisor: Supervisor, msg: Header) -> None:
    """Settle the running cell with the worker's result ``msg``; kill a worker whose result no
    worker sends (:func:`~.cells.bad_result`): a cell wrote it on the channel."""
    if why := bad_result(msg):
        _kill_worker_for(supervisor, f"{why}: no worker sends that (a cell can write to its channel)")
    elif msg.get("status") == "exited":
        supervisor._finish_exit(msg)
    else:
        supervisor.finish(msg)


def _take_tool_call(supervisor: Supervisor, msg: Header) -> None:
    """Pass the worker's ``tool_call`` ``msg`` on to the host, or answer it: its cell has settled.
    A call id that is no string (no worker's: a cell wrote it on the channel; a list's ended the
    runner in a ``TypeError``, unhashable) kills the worker."""
    if not isinstance(msg.get("id"), str):
        _kill_worker_for(supervisor, f"its tool_call's id is {type(msg.get('id')).__name__} {str(msg.get('id'))[:40]!r}: "
                                     "no worker sends that (a cell can write to its channel)")
    elif supervisor.cells.keep_tool_call(msg):  # until answered: a re-attach gets it again
        supervisor.link.reply(msg)
    else:  # its cell settled before the call got here: the host would drop it, unanswered
        supervisor.do_tool_result({"type": "tool_result", "id": msg.get("id"), "ok": False, "error": _NO_CELL})
