"""A spare kernel: one a kernel server forks and sets up *ahead* of the next spawn.

Where a local start goes (docs/numbers.md): after the server's fork, a fresh kernel's first steps
write to pages it shares with the server (about a thousand copy-on-write faults in its supervisor
and its worker), and the supervisor forks its worker: about 5 ms of an 9 ms start to first
result. So the server keeps one kernel forked ahead, its *spare*: a supervisor in a session of its
own, with only its socket to the server open, its :class:`.Supervisor` built and its worker
forked and set up as far as no config is needed (its stdio on the output pipes, its signal
handlers, ``faulthandler``: :func:`.worker_process.worker_main`; one cell's code path run once),
both waiting for a kernel's config. A spawn hands the config and the channel to the spare
(``SCM_RIGHTS``), and it becomes that kernel, doing then what a kernel the server forks at the
request does after its fork (:func:`.server.enter_kernel`): the kernel's log on stderr, its kernel
id written in both processes' environ, ``random`` reseeded in both, its cwd entered and its cgroup
joined (the worker, before its environment is applied and its first cell runs), its config's
output cap, token, orphan timer and OOM counter taken. The server answers the host once both
processes carry the id, as for a fork; it then makes the next spare when no request waits.

The spare is the server's, not a kernel: it carries the server's placeholder id (the leak probes
count it with the server), is no child a ``ping`` counts or the idle timeout waits for, and ends
with the server (EOF on its socket: it kills its worker and exits) or when the server refuses a
spawn as stale (no spawn would take it). What differs from a kernel forked at the request: the
pages the two processes touched before the claim are charged to the server's memory cgroup, not the
kernel's (about 2 MB locally, where kernels join no cgroup unless asked); a spare that fails its
claim before it touched the channel is killed and the server forks the kernel as before (one that
answers nothing is killed and the host spawns the kernel), and a spare whose worker alone did not
take the claim kills it and forks the kernel's first worker.

Spare protocol, on a ``SOCK_SEQPACKET`` socketpair::

    server -> spare   JSON runner config + the channel fd (SCM_RIGHTS); a remote server's
                      (:mod:`.server_remote`): its listening socket, ``listen`` in the config
    spare  -> server  b"ok" once the supervisor carries the kernel id | b"error: why"
    spare  -> worker  the config as one frame; worker -> spare: one byte once it is stamped
"""

from __future__ import annotations

import array
import json
import os
import select
import signal
import socket
import sys
import traceback

from .attach import recv_fds
from .bounds import bound_value, safe_repr
from .environ import exec_source
from .frames import READ_CHUNK, FrameDecoder, encode_frame, send_all
from .procfs import close_fds_except, configured_oom_file, memory_cgroup_oom_file, print_exc_quietly
from .serve import cgroup_problem, write_pidfile
from .stamp import redirect_stdio, stamp_kernel_id
from .supervisor import DEFAULT_MAX_OUTPUT_BYTES, Supervisor
from .worker_process import KILL_WAIT_S

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Seconds the server waits for a spare to say it carries the kernel id (then it forks instead).
CLAIM_WAIT_S = 5.0
#: Exit status of a spare or its worker whose claim failed (EX_SOFTWARE, as a forked kernel's setup).
CLAIM_FAILED = 70
_STAMPED = b"s"


class Spare:
    """The server's side of its spare (see module docstring).

    :param pid: the spare's supervisor.
    :param sock: the server's end of their socketpair.
    """

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self.sock = sock

    def claim(self, config: dict[str, Any], channel_fd: int, max_bytes: int) -> tuple[str | None, bool]:
        """Make the spare kernel ``config``'s, on channel ``channel_fd``.

        :returns: ``(None, True)`` once it carries the kernel id; else ``(why not, clean)``, the
            spare being of no use (:meth:`drop` it): ``clean`` when it surely did not touch the
            channel (not sent, or it said why not before it would), so that a fork may use it."""
        data = json.dumps(config).encode("utf-8")
        if len(data) > max_bytes:
            return f"config of {len(data)} bytes", True
        try:
            self.sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [channel_fd]))])
        except OSError as exc:  # it ended: nothing was sent
            return f"{type(exc).__name__}: {exc}", True
        try:
            reply = self.sock.recv(4096) if select.select([self.sock], [], [], CLAIM_WAIT_S)[0] else None
        except OSError as exc:
            return f"{type(exc).__name__}: {exc}", False
        if reply == b"ok":
            return None, True
        if reply is None:
            return f"no answer within {CLAIM_WAIT_S} s", False
        return reply.decode("utf-8", "replace") or "it ended", reply.startswith(b"error: ")

    def drop(self) -> None:
        """End the spare (its worker ends at EOF from it) and close the socket; the server reaps it."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        self.sock.close()


def fork_spare(close_in_child: Any) -> Spare:
    """Fork a spare (in the server); ``close_in_child`` closes the server's fds in the child.

    :raises OSError: if the socketpair or the fork fails.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        raise
    if pid == 0:
        signal.set_wakeup_fd(-1)
        ours.close()
        close_in_child()
        become_spare(theirs)
    theirs.close()
    return Spare(pid, ours)


def become_spare(pair: socket.socket) -> None:
    """In a freshly forked child of the server: set up a kernel ahead, wait for its claim on
    ``pair``, then serve it. Never returns."""
    code = 0
    sup: Supervisor | None = None
    try:
        os.setsid()
        redirect_stdio(None)
        close_fds_except({0, 1, 2, pair.fileno()})
        if "random" in sys.modules:
            sys.modules["random"].seed()  # the worker reseeds again at its claim
        sup = Supervisor({})
        sup.start_worker(claim=_worker_claim)
        _warm_up()
        code = _serve_claim(sup, pair)
    except BaseException:  # noqa: BLE001 - report in the kernel's log (or nowhere, before a claim) and leave
        code = CLAIM_FAILED
        print_exc_quietly()
    finally:
        if sup is not None and code:
            sup.worker.signal_group(signal.SIGKILL)
        os._exit(code)


def _serve_claim(sup: Supervisor, pair: socket.socket) -> int:
    """Wait for the claim, become its kernel and serve it, on its channel or (``listen`` in its
    config: a remote server's) its listening socket; the exit status (0: the server ended first).

    The server hears ``ok`` once this process carries the kernel id (what a host whose server is
    gone looks for to end a kernel, as after a fork); the worker, told at the same time, stamps
    itself meanwhile, and the hello waits for it: no one hears of the worker before it carries the id."""
    msg, fds = recv_fds(pair, 4 << 20, 4)
    if not msg or len(fds) != 1:
        return 0 if not msg else CLAIM_FAILED
    config = json.loads(msg.decode("utf-8"))
    redirect_stdio(config.get("log"))
    why = _stamp_and_tell(sup, config)
    try:
        pair.send(b"ok" if why is None else f"error: {why}".encode("utf-8", "replace"))
    except OSError:
        return CLAIM_FAILED
    pair.close()
    if why is not None:
        return CLAIM_FAILED
    if "random" in sys.modules:
        sys.modules["random"].seed()  # never the server's, a sibling's or the spare's sequence
    cwd = config.get("cwd") or config.get("kernel_dir") or "/"
    try:
        os.chdir(cwd)
    except OSError as exc:  # as a forked kernel says it (server.enter_kernel)
        print(f"hermes-kernel runner: cannot enter the working directory cwd={cwd!r}: {exc.strerror}",
              file=sys.stderr, flush=True)
        return CLAIM_FAILED
    problem = cgroup_problem(config)
    if problem is not None:
        print(problem, file=sys.stderr, flush=True)
        return CLAIM_FAILED
    silent = _worker_stamped(sup)
    if silent is not None and not _drop_worker(sup, silent):
        return CLAIM_FAILED
    _take_config(sup, config)
    if sup.worker.pid is None:
        sup.start_worker()  # as a restart does: a worker forked from this claimed supervisor
    sock = socket.socket(fileno=fds[0])
    sock.set_inheritable(False)
    if config.get("listen"):  # a remote server's kernel: clients attach to its socket (serve.run_listening)
        write_pidfile(config)
        sup.link.listen(sock)
    else:
        sup.link.attach(sock, authenticated=True)
        sup.say_hello()
    sup.run()
    return 0


def _stamp_and_tell(sup: Supervisor, config: dict[str, Any]) -> str | None:
    """Stamp this process and send the worker its claim; ``None`` when both went right."""
    try:
        stamp_kernel_id(str(config["kernel_id"]))
        worker = sup.worker.sock
        if worker is None or sup.worker.reap() is not None:
            return "the spare's worker ended before its claim"
        worker.setblocking(True)
        send_all(worker, encode_frame({"type": "claim", "config": config}))
    except (OSError, KeyError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _worker_stamped(sup: Supervisor) -> str | None:
    """Wait for the worker's word that it carries the kernel id; ``None`` once it came, else the line that says why not."""
    worker = sup.worker.sock
    try:
        ready = worker is not None and select.select([worker], [], [], CLAIM_WAIT_S)[0]
        stamped = worker.recv(1) if ready and worker is not None else b""
        if worker is not None:
            worker.setblocking(False)
    except OSError as exc:
        stamped = repr(exc).encode()
    if stamped == _STAMPED:
        return None
    return f"hermes-kernel runner: the kernel's worker did not take its config (a spare's claim): {stamped!r}"


def _drop_worker(sup: Supervisor, why: str) -> bool:
    """The spare's worker did not take its claim (stopped, gone): kill it, so that the kernel's
    first worker is forked from this supervisor, claimed by then; ``False`` if it would not end.
    The server has its ``ok`` already (the channel is this process's): failing here failed the
    start (``died during start (exit code 70)``)."""
    print(f"{why}; a fresh worker is forked", file=sys.stderr, flush=True)
    sup.worker.signal_group(signal.SIGKILL)
    return sup.worker.wait(KILL_WAIT_S) is not None


def _take_config(sup: Supervisor, config: dict[str, Any]) -> None:
    """What :class:`.Supervisor` and its parts take from a kernel's config when built, taken now
    (the spare's were built from an empty one), before any cell: keep in step with their ``__init__``."""
    from .capture import BoundedCapture

    sup.config = config
    sup.orphan_timeout = config.get("orphan_timeout")
    sup.exit_grace = float(config.get("exit_grace", sup.exit_grace))
    cap = int(config.get("max_output_bytes", DEFAULT_MAX_OUTPUT_BYTES))
    sup.pipes.out, sup.pipes.err = BoundedCapture(cap), BoundedCapture(cap)
    sup.link.token = config.get("token") or ""
    worker = sup.worker
    worker.config = config
    worker.oom_file = configured_oom_file(config)
    worker.oom_file_own = worker.oom_file is not None or bool(config.get("cgroup_own"))
    if worker.oom_file is None and worker.pid is not None:
        worker.oom_file = memory_cgroup_oom_file(worker.pid) or ""  # the cgroup it has joined now
    sup.cells.oom_count()


def _warm_up() -> None:
    """Run, before the claim, the code the claim runs (the environ block read, a config's JSON),
    so that its copy-on-write faults are taken now, not on a start's path."""
    from .stamp import _environ_region, _slot_offset

    _slot_offset(_environ_region()[1])
    json.loads(json.dumps({"kernel_id": "", "log": None, "cwd": None, "env": {"": ""}}))
    encode_frame({"type": "claim", "config": {}})


def _warm_cell_path() -> None:
    """In the spare's worker: a cell's source run, its value bounded and framed, an ``execute`` frame
    read, once before the claim (their copy-on-write faults and first-call costs off the first cell)."""
    reply = {"type": "result", "id": 0, "status": "ok"}
    bound_value(reply, safe_repr(exec_source("1", {})), 1 << 20)
    decoder = FrameDecoder()
    decoder.feed(encode_frame({"type": "execute", "id": 1, "code": "1", "tools": []}))
    decoder.next_frame()
    encode_frame(reply)


def _worker_claim(child: socket.socket) -> dict[str, Any]:
    """In the spare's worker, set up as far as no config is needed (:func:`.worker_process.worker_main`:
    its stdio on the output pipes already): wait for the claim's config, take what a forked worker
    inherits from its supervisor (kernel id, cwd, a fresh ``random``), say so; the config. EOF (the
    spare ended unclaimed) or any failure ends this process, its traceback in the kernel's log (its
    stderr is the output pipe, which the supervisor drains unread as it forks a worker instead)."""
    config: dict[str, Any] = {}
    try:
        _warm_up()
        _warm_cell_path()
        decoder = FrameDecoder()
        frame = None
        while frame is None:
            data = child.recv(READ_CHUNK)
            if not data:
                os._exit(0)
            decoder.feed(data)
            frame = decoder.next_frame()
        config = frame[0]["config"]
        stamp_kernel_id(str(config["kernel_id"]))
        if "random" in sys.modules:
            sys.modules["random"].seed()
        try:
            os.chdir(config.get("cwd") or config.get("kernel_dir") or "/")
        except OSError:
            pass  # the supervisor says why and ends the kernel
        send_all(child, _STAMPED)
        return config
    except BaseException:  # noqa: BLE001 - never back into the spare's code in this process
        try:
            if isinstance(config, dict) and config.get("log"):
                redirect_stdio(config["log"])
            os.write(2, traceback.format_exc().encode("utf-8", "backslashreplace"))
        except BaseException:  # noqa: BLE001
            pass
        os._exit(CLAIM_FAILED)
