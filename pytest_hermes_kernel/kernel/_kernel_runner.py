"""The kernel runner: the program that runs where the kernel lives.

Stdlib only and never imports pytest_hermes_kernel: it is shipped verbatim to docker
containers and ssh hosts (the same rule pytest-xdist follows for its ``remote.py``).

Process layout (one kernel)::

    host --channel--> supervisor --private socketpair--> worker (user code, own pgid)
                          ^  reads the worker's fd 1/2 pipes, bounded head + tail

* The **supervisor** owns the channel. It never runs user code, so it stays responsive while a
  cell holds the GIL in C code: it drains output (no pipe-buffer deadlock), delivers SIGINT to
  the worker's process group, sees the worker die (``waitpid`` gives the exact exit code or
  signal), reads the memory cgroup's OOM counter, forks a fresh worker on restart, and kills the
  worker's group when the host goes away (channel EOF for local, orphan timer for remote).
* The **worker** is forked from the supervisor. It holds the persistent namespace, runs one cell
  at a time with stdin on ``/dev/null`` and fd 1/2 on pipes, and talks to the supervisor only.

Modes::

    python _kernel_runner.py serve --fd N              # local: channel is inherited fd N
    python _kernel_runner.py serve --listen SOCK       # remote: unix socket, daemonizes
    python _kernel_runner.py relay SOCK                # stdin/stdout <-> unix socket
    python _kernel_runner.py client DIR PARAMS         # execute-only backends: one long poll

``serve`` reads one JSON config object from stdin first (never argv: it may hold the token).

Frames (both directions, and between supervisor and worker)::

    u32 BE total length | u32 BE header length | header JSON (UTF-8) | blob bytes...

The header's ``"blobs"`` lists the byte lengths of the blobs that follow it.
"""

from __future__ import annotations

import ast
import atexit
import builtins
import fcntl
import hmac
import io
import json
import os
import select
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import types

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 64 * 1024 * 1024
_HEAD = struct.Struct(">II")
_READ_CHUNK = 65536


# --------------------------------------------------------------------------------------- frames
class FrameError(Exception):
    """A frame that cannot be decoded (bad length, bad JSON)."""


def encode_frame(header: dict, blobs: tuple = ()) -> bytes:
    """Serialize ``header`` and the byte ``blobs`` into one frame."""
    if blobs:
        header = dict(header, blobs=[len(b) for b in blobs])
    body = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    total = _HEAD.size - 4 + len(body) + sum(len(b) for b in blobs)
    return b"".join((_HEAD.pack(total, len(body)), body, *blobs))


class FrameDecoder:
    """Incremental frame parser: ``feed(data)`` then iterate ``frames()``."""

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_frame_bytes

    def feed(self, data: bytes) -> None:
        self._buf += data

    def pending(self) -> int:
        return len(self._buf)

    def next_frame(self):
        """Return ``(header, blobs)`` for the next complete frame, or ``None``."""
        buf = self._buf
        if len(buf) < 4:
            return None
        (total,) = struct.unpack_from(">I", buf, 0)
        if total < 4 or total > self._max:
            raise FrameError(f"frame length {total} outside 4..{self._max}")
        if len(buf) < 4 + total:
            return None
        (hlen,) = struct.unpack_from(">I", buf, 4)
        if hlen > total - 4:
            raise FrameError(f"header length {hlen} exceeds frame length {total}")
        try:
            header = json.loads(bytes(buf[8 : 8 + hlen]).decode("utf-8"))
        except ValueError as exc:
            raise FrameError(f"frame header is not JSON: {exc}") from None
        if not isinstance(header, dict):
            raise FrameError("frame header is not a JSON object")
        blobs = []
        pos = 8 + hlen
        for n in header.get("blobs", ()):
            if not isinstance(n, int) or n < 0 or pos + n > 4 + total:
                raise FrameError("frame blob lengths do not add up")
            blobs.append(bytes(buf[pos : pos + n]))
            pos += n
        del buf[: 4 + total]
        return header, blobs


def _send_all(sock: socket.socket, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[sock.send(view):]
        except BlockingIOError:
            select.select([], [sock], [], 1.0)


# --------------------------------------------------------------------------------------- output
class BoundedCapture:
    """Keeps the first ``head_bytes`` and the last ``cap - head_bytes`` bytes of a stream."""

    def __init__(self, cap: int) -> None:
        self.cap = max(0, int(cap))
        self.head_cap = self.cap * 2 // 5
        self.tail_cap = self.cap - self.head_cap
        self.reset()

    def reset(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if data and self.tail_cap:
            self.tail += data
            extra = len(self.tail) - self.tail_cap
            if extra > 0:
                del self.tail[:extra]

    def take(self) -> tuple:
        """Return ``(head, tail, total, dropped)`` and start a new capture."""
        head, tail, total = bytes(self.head), bytes(self.tail), self.total
        self.reset()
        return head, tail, total, total - len(head) - len(tail)


# --------------------------------------------------------------------------------------- worker
class _Worker:
    """The forked interpreter that runs cells (see module docstring)."""

    def __init__(self, sock: socket.socket, config: dict) -> None:
        self.sock = sock
        self.decoder = FrameDecoder()
        self.pid = os.getpid()
        self.namespace = {"__name__": "__main__", "__builtins__": builtins}
        self.execution_count = 0
        self.cell_id = None
        self.tools = []
        self.config = config
        # One reader at a time: the main loop and threads waiting on tool results share the
        # socket, so whoever waits reads for everyone and routes each frame to its box (a
        # thread of an earlier cell must never swallow the next cell's "execute").
        self.send_lock = threading.Lock()
        self.cond = threading.Condition()
        self.reading = False
        self.eof = False
        self.commands = []  # execute / exit, for the main loop
        self.replies = {}  # tool call id -> tool_result (None while pending)
        self.calls = 0

    def send(self, header: dict) -> None:
        if os.getpid() != self.pid:  # a forked child of a cell never touches the channel
            os._exit(0)
        data = encode_frame(header)
        with self.send_lock:
            _send_all(self.sock, data)

    def recv(self):
        """The next command (``execute``/``exit``) for the main loop."""
        return self._wait(lambda: self.commands.pop(0) if self.commands else None)

    def _wait(self, take):
        while True:
            with self.cond:
                while True:
                    got = take()
                    if got is not None:
                        return got
                    if self.eof:
                        raise EOFError
                    if not self.reading:
                        self.reading = True
                        break
                    self.cond.wait()
            data = None
            try:
                data = self.sock.recv(_READ_CHUNK)
            except OSError:
                data = b""
            finally:  # also on KeyboardInterrupt: hand the reading over
                with self.cond:
                    self.reading = False
                    if data:
                        self.decoder.feed(data)
                        while (frame := self.decoder.next_frame()) is not None:
                            self._route(frame[0])
                    elif data is not None:
                        self.eof = True
                    self.cond.notify_all()

    def _route(self, msg: dict) -> None:
        if msg.get("type") != "tool_result":
            self.commands.append(msg)
        elif msg.get("id") in self.replies:
            self.replies[msg["id"]] = msg

    def loop(self) -> None:
        self.send({"type": "ready", "pid": self.pid})
        while True:
            try:
                msg = self.recv()
            except KeyboardInterrupt:  # a late SIGINT between cells: nothing to interrupt
                continue
            except (EOFError, OSError):
                return
            kind = msg.get("type")
            if kind == "execute":
                self.run_cell(msg)
            elif kind == "exit":
                return

    def run_cell(self, msg: dict) -> None:
        self.execution_count += 1
        self.cell_id = msg["id"]
        self.tools = list(msg.get("tools", ()))
        started = time.perf_counter()
        reply = {"type": "result", "id": msg["id"], "status": "ok"}
        exiting = None
        global _IN_CELL
        _IN_CELL = True
        try:
            value = self.exec_source(msg.get("code", ""))
            _IN_CELL = False
            if value is not None:
                reply["value"] = self.safe_repr(value)
        except SystemExit as exc:
            _IN_CELL = False
            exiting = self.describe_exit(exc, reply)
        except KeyboardInterrupt as exc:
            _IN_CELL = False
            self.describe_error(exc, reply, "interrupted")
        except BaseException as exc:  # noqa: BLE001 - every cell error is reported, never raised
            _IN_CELL = False
            self.describe_error(exc, reply, "error")
        finally:
            _IN_CELL = False
            self.cell_id = None
            self.flush_stdio()
        if os.getpid() != self.pid:  # os.fork() in a cell: the child ends here
            os._exit(0)
        reply["execution_count"] = self.execution_count
        reply["duration_s"] = time.perf_counter() - started
        self.send(reply)
        if exiting is not None:
            _finalize_and_exit(exiting)

    def exec_source(self, source: str):
        tree = ast.parse(source, "<cell>", "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        exec(compile(tree, "<cell>", "exec"), self.namespace)
        if last is None:
            return None
        value = eval(compile(last, "<cell>", "eval"), self.namespace)
        if value is not None:
            self.namespace["_"] = value
        return value

    @staticmethod
    def safe_repr(value) -> str:
        try:
            return repr(value)
        except BaseException as exc:  # noqa: BLE001 - a broken __repr__ must not kill the cell
            return f"<repr failed: {type(exc).__name__}: {exc}>"

    def describe_error(self, exc: BaseException, reply: dict, status: str) -> None:
        reply["status"] = status
        reply["ename"] = type(exc).__name__
        reply["evalue"] = str(exc)
        tbe = traceback.TracebackException.from_exception(exc)
        tbe.stack = traceback.StackSummary.from_list(
            [f for f in tbe.stack if f.filename != __file__]
        )
        reply["traceback"] = "".join(tbe.format())

    def describe_exit(self, exc: SystemExit, reply: dict) -> int:
        code = exc.code
        if code is None:
            status = 0
        elif isinstance(code, int):
            status = code & 0xFF
        else:
            status = 1
            try:
                sys.stderr.write(f"{code}\n")
            except Exception:  # noqa: BLE001 - stderr may be closed by the cell
                pass
        reply.update(status="exited", ename="SystemExit", evalue="" if code is None else str(code),
                     exit_code=status, traceback=f"SystemExit: {code!r}\n")
        return status

    @staticmethod
    def flush_stdio() -> None:
        for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:  # noqa: BLE001 - the cell may have closed or replaced them
                pass

    # ---------------------------------------------------------------- tool RPC, worker side
    def call_tool(self, name: str, args: dict):
        if os.getpid() != self.pid:
            raise ToolError("tool calls are not available in a process forked by a cell")
        if self.cell_id is None:
            raise ToolError("No active cell: the cell this call belonged to has settled, "
                            "so its tool authority is retired.")
        with self.cond:
            self.calls += 1
            call_id = f"{self.pid}-{self.calls}"
            self.replies[call_id] = None
        try:
            self.send({"type": "tool_call", "id": call_id, "cell": self.cell_id,
                       "name": name, "args": args})
            msg = self._wait(lambda: self.replies.get(call_id))
        finally:
            with self.cond:
                self.replies.pop(call_id, None)
        if not msg.get("ok"):
            raise ToolError(msg.get("error", "tool call failed"))
        return msg.get("value")


class ToolError(Exception):
    """A tool call was refused or failed (raised inside the cell by ``hermes_tools``)."""


_IN_CELL = False
_WORKER = None


def _sigint(signum, frame):
    if _IN_CELL:
        raise KeyboardInterrupt
    # outside a cell there is nothing to interrupt: the runner's own code must not break


def _make_tools_module(worker: _Worker) -> types.ModuleType:
    mod = types.ModuleType("hermes_tools", "Tools the host registered; call them like functions.")
    mod.ToolError = ToolError

    def call(name, /, **kwargs):
        """Call the host tool ``name`` with keyword arguments; returns its JSON-able result."""
        return worker.call_tool(name, kwargs)

    def available():
        """Names of the tools the host offers to the running cell."""
        return list(worker.tools)

    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda **kwargs: worker.call_tool(name, kwargs)

    mod.call, mod.available, mod.__getattr__ = call, available, __getattr__
    return mod


def _finalize_and_exit(code: int) -> None:
    """End the worker as a clean interpreter exit would: threads joined, atexit run, stdio flushed."""
    try:
        threading._shutdown()  # joins non-daemon threads; the supervisor kills us after its grace
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    _Worker.flush_stdio()
    os._exit(code)


def _worker_main(sock: socket.socket, out_w: int, err_w: int, config: dict) -> None:
    """Entry point of a freshly forked worker. Never returns."""
    code = 0
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        for fd in (null, out_w, err_w):
            if fd > 2:
                os.close(fd)
        signal.signal(signal.SIGINT, _sigint)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for sig in (signal.SIGCHLD, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)
        sys.stdin = open(0, "r", encoding="utf-8", closefd=False)
        sys.stdout = _text_stream(1)
        sys.stderr = _text_stream(2)
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr
        sys.argv = [""]
        cwd = config.get("cwd")
        if cwd:
            os.chdir(cwd)
        if "" not in sys.path:
            sys.path.insert(0, "")
        global _WORKER
        _WORKER = worker = _Worker(sock, config)
        sys.modules["hermes_tools"] = _make_tools_module(worker)
        os.register_at_fork(after_in_child=_close_channel_in_fork_child)
        worker.loop()
    except BaseException:  # noqa: BLE001 - report on the inherited stderr and leave
        code = 70
        try:
            traceback.print_exc()
        except BaseException:  # noqa: BLE001
            pass
    finally:
        os._exit(code)


def _text_stream(fd: int) -> io.TextIOWrapper:
    """A real ``sys.stdout``-like stream on ``fd``: ``.buffer``, ``.fileno()``, written through."""
    raw = io.FileIO(fd, "wb", closefd=False)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", errors="backslashreplace",
                            line_buffering=True, write_through=True)


def _close_channel_in_fork_child() -> None:
    worker = _WORKER
    if worker is not None and os.getpid() != worker.pid:
        try:
            worker.sock.close()
        except OSError:
            pass


# --------------------------------------------------------------------------------- supervisor
def _set_nonblocking(fd: int) -> None:
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)


def _close_fds_except(keep) -> None:
    """Close every fd of this process but ``keep``: a worker must hold nothing of the
    supervisor's (above all not the host's channel, or the host would never see EOF)."""
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        fds = range(3, 1024)
    for fd in fds:
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _memory_cgroup_oom_file(pid: int):
    """Path of the OOM-kill counter of ``pid``'s memory cgroup (v1 or v2), or ``None``."""
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    in_container = os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv")
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if path.strip() == "/" and not in_container:
            continue  # the host's root cgroup: no memory limit of the kernel's own to read
        # the namespaced view a container sees is its own cgroup; on a host, only the exact path
        # is the kernel's (a parent's or the root's counter does not count a child's OOM kills)
        if "memory" in controllers.split(","):
            for base in (f"/sys/fs/cgroup/memory{path}",) + (("/sys/fs/cgroup/memory",) if in_container else ()):
                if os.path.exists(f"{base}/memory.oom_control"):
                    return f"{base}/memory.oom_control"
        if controllers == "":
            for base in (f"/sys/fs/cgroup{path}",) + (("/sys/fs/cgroup",) if in_container else ()):
                if os.path.exists(f"{base}/memory.events"):
                    return f"{base}/memory.events"
    return None


def _kill_session_strays() -> None:
    """SIGKILL every other process of the session this supervisor leads.

    Between workers, everything left in the session was started by a cell, including children
    that moved to a process group of their own (``process_group=0``), which the worker's
    ``killpg`` misses. Only a ``setsid`` daemon has left the session: that is how a cell opts out.
    Does nothing unless the supervisor leads its session, or where there is no ``/proc``.
    """
    me = os.getpid()
    try:
        if os.getsid(0) != me:
            return
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                stat = fh.read()
            if int(stat[stat.rfind(b")") + 2 :].split()[3]) == me:
                os.kill(int(name), signal.SIGKILL)
        except (OSError, ValueError, IndexError):
            continue


def read_oom_kills(path):
    """The ``oom_kill`` count in a cgroup's ``memory.oom_control`` (v1) or ``memory.events`` (v2)."""
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                name, _, value = line.partition(" ")
                if name == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return None
    return None


class _Supervisor:
    """Owns the channel and the worker (see module docstring)."""

    def __init__(self, config: dict) -> None:
        self.config = config
        self.cap = int(config.get("max_output_bytes", 1024 * 1024))
        self.orphan_timeout = config.get("orphan_timeout")
        self.token = config.get("token") or ""
        self.exit_grace = float(config.get("exit_grace", 2.0))
        self.sel = selectors.DefaultSelector()
        self.chan = None
        self.chan_decoder = None
        self.listener = None
        self.worker_pid = None
        self.worker_sock = None
        self.worker_decoder = None
        self.worker_exit = None  # (exit_code, signal) of the last worker that ended
        self.worker_generation = 0
        self.cell = None  # header of the running execute request
        self.cell_outcome = None  # the worker's result header, waiting for the pipes to drain
        self.out = BoundedCapture(self.cap)
        self.err = BoundedCapture(self.cap)
        self.unacked = {}  # id -> frame bytes (replayed on re-attach)
        self.orphan_since = None
        self.oom_file = config.get("oom_counter_file")
        self.oom_baseline = None
        self.oom_read_at = float("-inf")
        self.stopping = False
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        for fd in (self.out_r, self.err_r):
            _set_nonblocking(fd)
            try:
                fcntl.fcntl(fd, 1031, 1 << 20)  # F_SETPIPE_SZ: fewer wakeups on floods
            except OSError:
                pass
            self.sel.register(fd, selectors.EVENT_READ, "pipe")
        self.wake_r, self.wake_w = os.pipe()
        _set_nonblocking(self.wake_r)
        _set_nonblocking(self.wake_w)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, self._on_sigterm)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        self.sel.register(self.wake_r, selectors.EVENT_READ, "wake")

    def _on_sigterm(self, *_):
        self.stopping = True

    # ------------------------------------------------------------------------- worker control
    def start_worker(self) -> int:
        parent, child = socket.socketpair()
        cgroup_procs = self.config.get("cgroup_procs")
        pid = os.fork()
        if pid == 0:  # worker
            parent.close()
            for fd in (self.out_r, self.err_r, self.wake_r, self.wake_w):
                os.close(fd)
            if self.chan is not None:
                self.chan.close()
            if self.listener is not None:
                self.listener.close()
            self.sel.close()
            _close_fds_except({0, 1, 2, child.fileno(), self.out_w, self.err_w})
            if cgroup_procs:
                try:
                    with open(cgroup_procs, "w", encoding="ascii") as fh:
                        fh.write(str(os.getpid()))
                except OSError:
                    pass
            _worker_main(child, self.out_w, self.err_w, self.config)
        child.close()
        parent.setblocking(False)
        self.worker_pid = pid
        self.worker_sock = parent
        self.worker_decoder = FrameDecoder()
        self.worker_generation += 1
        self.sel.register(parent, selectors.EVENT_READ, "worker")
        if self.oom_file is None:
            self.oom_file = _memory_cgroup_oom_file(pid) or ""
        return pid

    def kill_worker_group(self, sig: int) -> None:
        if self.worker_pid is None:
            return
        try:
            os.killpg(self.worker_pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:
            try:
                os.kill(self.worker_pid, sig)
            except ProcessLookupError:
                pass

    def wait_worker(self, timeout: float):
        """Reap the worker within ``timeout`` seconds; return ``(exit_code, signal)`` or ``None``."""
        deadline = time.monotonic() + timeout
        while self.worker_pid is not None:
            try:
                pid, status = os.waitpid(self.worker_pid, os.WNOHANG)
            except ChildProcessError:
                return self.worker_gone(None)
            if pid:
                return self.worker_gone(status)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.005)
        return self.worker_exit

    def worker_gone(self, status):
        if status is None:
            info = (None, None)
        elif os.WIFSIGNALED(status):
            info = (128 + os.WTERMSIG(status), os.WTERMSIG(status))
        else:
            info = (os.WEXITSTATUS(status), None)
        # the group may hold children of cells (pool workers, sleep): they die with the kernel
        try:
            os.killpg(self.worker_pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        _kill_session_strays()
        if self.worker_sock is not None:
            self.sel.unregister(self.worker_sock)
            self.worker_sock.close()
            self.worker_sock = None
        self.worker_pid = None
        self.worker_exit = info
        return info

    def reap_children(self) -> None:
        """Collect exited children (the worker, or orphans re-parented to us)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if not pid:
                return
            if pid == self.worker_pid:
                info = self.worker_gone(status)
                if self.cell is not None:
                    self.finish_cell_with_death(info)

    def stop_worker(self, grace: float) -> str:
        """Request -> SIGTERM -> SIGKILL; return the step that ended the worker."""
        if self.worker_pid is None:
            return "already-exited"
        steps = (("request", None), ("sigterm", signal.SIGTERM), ("sigkill", signal.SIGKILL))
        for step, sig in steps:
            if sig is None:
                if self.cell is not None or self.worker_sock is None:
                    continue
                try:
                    _send_all(self.worker_sock, encode_frame({"type": "exit"}))
                except OSError:
                    continue
            else:
                self.kill_worker_group(sig)
            if self.wait_worker(grace if sig != signal.SIGKILL else 5.0) is not None:
                return step
        return "sigkill"

    def oom_count(self):
        return read_oom_kills(self.oom_file)

    # ------------------------------------------------------------------------------- cells
    def begin_cell(self, msg: dict) -> None:
        self.reap_children()  # a worker killed between cells is reported, not handed the cell
        if self.worker_pid is None:
            code, sig = self.worker_exit or (None, None)
            self.reply({"type": "result", "id": msg["id"], "status": "died", "not_run": True,
                        "exit_code": code, "signal": sig})
            return
        self.drain_pipes(discard=True)
        self.out.reset()
        self.err.reset()
        self.cell = msg
        now = time.monotonic()
        if now - self.oom_read_at >= 1.0:  # reading /sys costs ~0.1 ms: at most once a second
            self.oom_baseline, self.oom_read_at = self.oom_count(), now
        forward = {k: v for k, v in msg.items() if k in ("type", "id", "code", "tools")}
        try:
            _send_all(self.worker_sock, encode_frame(forward))
        except OSError:
            pass  # the worker is dying; SIGCHLD finishes the cell

    def finish_cell(self, outcome: dict) -> None:
        self.drain_pipes()
        self.send_result(outcome)

    def finish_cell_with_death(self, info) -> None:
        code, sig = info
        outcome = {"type": "result", "id": self.cell["id"], "status": "died",
                   "exit_code": code, "signal": sig}
        pending = self.cell_outcome
        if pending is not None and pending.get("status") == "exited":
            outcome = dict(pending, exit_code=code, signal=sig)
        else:
            before, after = self.oom_baseline, self.oom_count()
            outcome["oom_killed"] = bool(sig == signal.SIGKILL and before is not None
                                         and after is not None and after > before)
            outcome["oom_counter"] = after
            self.oom_baseline, self.oom_read_at = after, time.monotonic()
        self.cell_outcome = None
        self.finish_cell(outcome)

    def send_result(self, outcome: dict) -> None:
        oh, ot, ototal, odropped = self.out.take()
        eh, et, etotal, edropped = self.err.take()
        outcome.update(stdout_total=ototal, stdout_dropped=odropped,
                       stderr_total=etotal, stderr_dropped=edropped,
                       worker_pid=self.worker_pid, worker_generation=self.worker_generation)
        self.cell = None
        frame = encode_frame(outcome, (oh, ot, eh, et))
        self.unacked[outcome["id"]] = frame
        self.send_frame(frame)

    def drain_pipes(self, discard: bool = False) -> None:
        for fd, cap in ((self.out_r, self.out), (self.err_r, self.err)):
            while True:
                try:
                    data = os.read(fd, _READ_CHUNK)
                except BlockingIOError:
                    break
                if not data:
                    break
                if not discard and self.cell is not None:
                    cap.add(data)

    def on_pipe(self, fd: int) -> None:
        try:
            data = os.read(fd, _READ_CHUNK)
        except BlockingIOError:
            return
        if self.cell is None:
            return  # output between cells belongs to no cell
        (self.out if fd == self.out_r else self.err).add(data)

    # ------------------------------------------------------------------------------ channel
    def reply(self, header: dict) -> None:
        self.send_frame(encode_frame(header))

    def send_frame(self, frame: bytes) -> None:
        if self.chan is None:
            return
        try:
            self.chan.sendall(frame)  # the channel stays blocking; reads use MSG_DONTWAIT
        except OSError:
            self.drop_client()

    def attach_client(self, sock: socket.socket, authenticated: bool) -> None:
        if self.chan is not None:
            self.drop_client()
        sock.setblocking(True)
        self.chan = sock
        self.chan_decoder = FrameDecoder()
        self.authenticated = authenticated
        self.orphan_since = None
        self.sel.register(sock, selectors.EVENT_READ, "chan")
        if authenticated:
            self.say_hello()

    def say_hello(self, replayed=()) -> None:
        self.reply({"type": "hello", "proto": PROTOCOL_VERSION, "pid": os.getpid(),
                    "worker_pid": self.worker_pid, "python": sys.version.split()[0],
                    "kernel_id": self.config.get("kernel_id"), "replayed": list(replayed),
                    "running": None if self.cell is None else self.cell["id"]})

    def drop_client(self) -> None:
        if self.chan is None:
            return
        try:
            self.sel.unregister(self.chan)
        except (KeyError, ValueError):
            pass
        self.chan.close()
        self.chan = None
        self.orphan_since = time.monotonic()
        if self.listener is None:  # local: the channel is the lease; the host is gone
            self.stopping = True

    def on_chan(self) -> None:
        try:
            data = self.chan.recv(_READ_CHUNK, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.drop_client()
            return
        self.chan_decoder.feed(data)
        while self.chan is not None:
            try:
                frame = self.chan_decoder.next_frame()
            except FrameError as exc:
                self.reply({"type": "error", "error": f"bad frame: {exc}"})
                self.drop_client()
                return
            if frame is None:
                return
            self.on_message(frame[0])

    def on_message(self, msg: dict) -> None:
        kind = msg.get("type")
        if not self.authenticated:
            ok = kind == "attach" and hmac.compare_digest(
                str(msg.get("token", "")).encode(), self.token.encode())
            if not ok:
                self.reply({"type": "error", "error": "attach refused: bad token"})
                self.drop_client()
                return
            self.authenticated = True
            replay = [i for i in msg.get("pending", ()) if i in self.unacked]
            self.say_hello(replay)
            for i in replay:
                self.send_frame(self.unacked[i])
            return
        handler = getattr(self, f"do_{kind}", None)
        if handler is None:
            self.reply({"type": "error", "id": msg.get("id"), "error": f"unknown message {kind!r}"})
            return
        handler(msg)

    def do_execute(self, msg: dict) -> None:
        self.unacked.clear()  # a new request acknowledges every earlier result
        if self.cell is not None:
            self.reply({"type": "error", "id": msg.get("id"),
                        "error": "a cell is already running on this kernel"})
            return
        self.begin_cell(msg)

    def do_ack(self, msg: dict) -> None:
        self.unacked.pop(msg.get("id"), None)

    def do_interrupt(self, msg: dict) -> None:
        if self.cell is not None and self.worker_pid is not None:
            self.kill_worker_group(signal.SIGINT)

    def do_kill_worker(self, msg: dict) -> None:
        self.kill_worker_group(signal.SIGKILL)
        info = self.wait_worker(5.0)
        if self.cell is not None and info is not None:
            self.finish_cell_with_death(info)
        self.reply({"type": "killed", "id": msg.get("id"),
                    "exit_code": None if info is None else info[0],
                    "signal": None if info is None else info[1]})

    def do_start_worker(self, msg: dict) -> None:
        if self.worker_pid is None:
            self.start_worker()
        self.reply({"type": "worker", "id": msg.get("id"), "worker_pid": self.worker_pid})

    def do_ping(self, msg: dict) -> None:
        self.reply({"type": "pong", "id": msg.get("id"), "worker_pid": self.worker_pid,
                    "running": None if self.cell is None else self.cell["id"]})

    def do_tool_result(self, msg: dict) -> None:
        if self.worker_sock is not None:
            try:
                _send_all(self.worker_sock, encode_frame(msg))
            except OSError:
                pass

    def do_shutdown(self, msg: dict) -> None:
        grace = float(msg.get("grace", 2.0))
        code, sig = self.worker_exit or (None, None)
        step = self.stop_worker(grace)
        if self.worker_exit is not None:
            code, sig = self.worker_exit
        self.reply({"type": "bye", "id": msg.get("id"), "step": step,
                    "exit_code": code, "signal": sig})
        self.stopping = True

    # ------------------------------------------------------------------------------ worker io
    def on_worker(self) -> None:
        try:
            data = self.worker_sock.recv(_READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.on_worker_eof()
            return
        self.worker_decoder.feed(data)
        while self.worker_sock is not None:
            try:
                frame = self.worker_decoder.next_frame()
            except FrameError:
                self.kill_worker_group(signal.SIGKILL)
                return
            if frame is None:
                return
            self.on_worker_message(frame[0])

    def on_worker_message(self, msg: dict) -> None:
        kind = msg.get("type")
        if kind == "result" and self.cell is not None and msg.get("id") == self.cell["id"]:
            if msg.get("status") == "exited":
                self.cell_outcome = msg  # completed when the worker has really exited
                if self.wait_worker(self.exit_grace) is None:
                    self.kill_worker_group(signal.SIGKILL)
                    msg["note"] = "forced kill after grace: the exiting kernel did not end"
                    self.wait_worker(5.0)
                if self.cell is not None:
                    self.finish_cell_with_death(self.worker_exit)
                return
            self.finish_cell(msg)
        elif kind == "tool_call":
            if self.cell is not None and msg.get("cell") == self.cell["id"]:
                self.reply(msg)
            else:  # its cell settled before the call got here: the host would drop it, unanswered
                self.do_tool_result({"type": "tool_result", "id": msg.get("id"), "ok": False,
                                     "error": "No active cell: the cell this call belonged to has "
                                              "settled, so its tool authority is retired."})

    def on_worker_eof(self) -> None:
        info = self.wait_worker(1.0)
        if info is None:  # the worker closed its channel but lives on: it is unusable
            self.kill_worker_group(signal.SIGKILL)
            info = self.wait_worker(5.0)
        if self.cell is not None and info is not None:
            self.finish_cell_with_death(info)

    # ------------------------------------------------------------------------------- loop
    def run(self) -> None:
        if self.worker_pid is None:
            self.start_worker()
        while not self.stopping:
            timeout = None
            if self.orphan_timeout is not None and self.chan is None:
                since = self.orphan_since or time.monotonic()
                self.orphan_since = since
                timeout = max(0.0, since + float(self.orphan_timeout) - time.monotonic())
                if timeout == 0.0:
                    break
            for key, _ in self.sel.select(timeout):
                what = key.data
                if what == "pipe":
                    self.on_pipe(key.fd)
                elif what == "chan" and self.chan is not None:
                    self.on_chan()
                elif what == "worker" and self.worker_sock is not None:
                    self.on_worker()
                elif what == "listen":
                    self.on_accept()
                elif what == "wake":
                    self.on_wake()
        self.shutdown()

    def on_wake(self) -> None:
        try:
            while os.read(self.wake_r, 512):
                pass
        except BlockingIOError:
            pass
        self.reap_children()

    def on_accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except OSError:
            return
        self.attach_client(sock, authenticated=False)

    def shutdown(self) -> None:
        self.kill_worker_group(signal.SIGKILL)
        self.wait_worker(5.0)
        kdir = self.config.get("kernel_dir")
        if kdir and self.config.get("remove_kernel_dir", True):
            import shutil

            shutil.rmtree(kdir, ignore_errors=True)  # the host may be gone: leave nothing behind
        if self.listener is not None:
            try:
                os.unlink(self.config["listen"])
            except OSError:
                pass


# ------------------------------------------------------------------------------- entry points
def _read_config() -> dict:
    raw = b""
    while True:
        chunk = os.read(0, _READ_CHUNK)
        if not chunk:
            break
        raw += chunk
    config = json.loads(raw.decode("utf-8")) if raw.strip() else {}
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    return config


def serve_fd(fd: int) -> None:
    config = _read_config()
    sup = _Supervisor(config)
    sock = socket.socket(fileno=fd)
    sock.set_inheritable(False)
    sup.start_worker()
    sup.attach_client(sock, authenticated=True)
    sup.run()


def serve_listen(path: str) -> None:
    config = _read_config()
    config["listen"] = path
    old = os.umask(0o077)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    listener.bind(path)
    os.umask(old)
    os.chmod(path, 0o600)
    listener.listen(4)
    child = os.fork()
    if child:  # the exec that started us returns at once; the daemon lives on (pid == its sid)
        sys.stdout.write(f"ready {child}\n")
        sys.stdout.flush()
        os._exit(0)
    os.setsid()
    log = config.get("log")
    fd = os.open(log or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    if fd > 2:
        os.close(fd)
    if config.get("pidfile"):
        with open(config["pidfile"], "w", encoding="ascii") as fh:
            fh.write(f"{os.getpid()}\n")
    sup = _Supervisor(config)
    sup.start_worker()
    sup.listener = listener
    listener.setblocking(False)
    sup.orphan_since = time.monotonic()
    sup.sel.register(listener, selectors.EVENT_READ, "listen")
    sup.run()


def relay(path: str) -> None:
    """Copy stdin to the unix socket at ``path`` and the socket to stdout until either ends."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ, "in")
    sel.register(sock, selectors.EVENT_READ, "sock")
    while True:
        for key, _ in sel.select():
            if key.data == "in":
                data = os.read(0, _READ_CHUNK)
                if not data:
                    return
                sock.sendall(data)
            else:
                data = sock.recv(_READ_CHUNK)
                if not data:
                    return
                view = memoryview(data)
                while view:
                    view = view[os.write(1, view):]


# ------------------------------------------------------------------------------------ client
# One long poll for execute-only backends (the ``filecell`` transport). Self-contained: it uses
# only the frame codec above and fcntl/json/os/select/socket/sys/time, so the transport can ship
# these functions as a small module whose start does not pay for the runner's other imports.
CLIENT_BEGIN = "@@hermes-client begin@@"
CLIENT_SENT = "@@hermes-client sent@@"
CLIENT_END = "@@hermes-client end"
CLIENT_REQUESTS = ("execute", "start_worker", "kill_worker", "ping", "shutdown")
CLIENT_REPLIES = ("result", "worker", "killed", "pong", "bye", "error")
CLIENT_DROP_PREFIX = "q-"
CLIENT_HOLD_PREFIX = "h-"


def client(kernel_dir: str, params_b64: str) -> int:
    """Attach to the supervisor at ``kernel_dir/sock``, send frames, relay what comes back.

    ``params_b64`` is base64 JSON: ``frames`` (base64 frames to send after the attach),
    ``pending`` (request ids whose unacknowledged results the supervisor replays), ``wait``
    (ids to wait for; requests sent here are added), ``deadline_s``, ``pickup_s``, ``early``
    and ``hold_s``. The token comes from ``kernel_dir/token`` (never argv).

    * Frames the host dropped into the kernel dir while a poll ran (files ``q-<seq>``, base64)
      are sent before the argv frames when their seq is below ``early``; later ones are picked
      up while waiting, for ``pickup_s`` seconds.
    * Every frame received is printed as one base64 line after ``CLIENT_BEGIN``; the last line
      is ``CLIENT_END STATUS@@``: ``done`` (a reply for a ``wait`` id; with no ``wait`` ids:
      the hello), ``tool`` (a tool call of a ``wait`` cell), ``deadline``, ``eof`` (dropped:
      another client attached, or the supervisor ended), ``gone`` (nothing listens) or
      ``error`` (refused, bad frame).
    * Leaving is lossless: it half-closes and relays until the supervisor lets it go. After a
      tool call or at the deadline (the cell runs on) a forked holder stays attached for up to
      ``hold_s`` seconds and spools what comes (``h-<pid>.spool``, under the lock
      ``h-<pid>.lock``) until the next client takes over and relays the spool first: no frame
      is sent while nobody is attached, so a tool call from another thread is never lost.
    """
    import binascii

    params = json.loads(binascii.a2b_base64(params_b64))
    sys.stdout.write(CLIENT_BEGIN + "\n")
    status = _client_session(kernel_dir, params, binascii.a2b_base64(params.get("frames") or ""))
    sys.stdout.write(f"{CLIENT_END} {status}@@\n")
    sys.stdout.flush()
    return 0


def _client_session(kernel_dir: str, params: dict, data: bytes) -> str:
    try:
        with open(os.path.join(kernel_dir, "token"), encoding="ascii") as fh:
            token = fh.read().strip()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(os.path.join(kernel_dir, "sock"))
    except OSError:
        return "gone"
    wait = set(params.get("wait") or ())
    started = time.monotonic()
    deadline = started + float(params.get("deadline_s", 20.0))
    pickup_until = started + float(params.get("pickup_s", 15.0))
    with sock:
        try:
            sock.sendall(encode_frame({"type": "attach", "token": token,
                                       "pending": list(params.get("pending") or ())}))
            _client_pickup(kernel_dir, sock, wait, params.get("early"))  # dropped before argv's frames
            _client_note_requests(data, wait)
            sock.sendall(data)
        except OSError:
            return "eof"
        sys.stdout.write(CLIENT_SENT + "\n")
        status = _client_unspool(kernel_dir, wait)
        decoder = FrameDecoder()
        while status is None:
            now = time.monotonic()
            chunk = _client_read(sock, min(deadline - now, 0.05) if now < pickup_until else deadline - now)
            if chunk is None:
                if time.monotonic() >= deadline:
                    status = "deadline"
                elif time.monotonic() < pickup_until:
                    try:
                        _client_pickup(kernel_dir, sock, wait)
                    except OSError:
                        return "eof"
            elif not chunk:
                return "eof"
            else:
                status = _client_relay(decoder, chunk, wait)
        if status in ("tool", "deadline") and float(params.get("hold_s", 0)) > 0:
            _client_hold(kernel_dir, sock, decoder, wait, float(params["hold_s"]))
            return status
        _client_leave(sock, decoder)
        return status


def _client_leave(sock: socket.socket, decoder: FrameDecoder) -> None:
    """Half-close, then relay until the supervisor (having read all we sent) drops us."""
    try:
        sock.shutdown(socket.SHUT_WR)
    except OSError:
        return
    until = time.monotonic() + 5.0
    while True:
        chunk = _client_read(sock, until - time.monotonic())
        if not chunk or _client_relay(decoder, chunk, set()) == "error":
            return


def _client_hold(kernel_dir: str, sock: socket.socket, decoder: FrameDecoder, wait: set, hold_s: float) -> None:
    """Fork a holder that keeps this connection and spools frames; the caller returns at once."""
    import fcntl

    base = os.path.join(kernel_dir, f"{CLIENT_HOLD_PREFIX}{os.getpid()}")
    lock = os.open(base + ".lock", os.O_WRONLY | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # taken before the fork: the next client never misses it
    sys.stdout.flush()
    if os.fork():
        os.close(lock)  # the holder keeps the lock until its spool is complete
        return
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):  # the backend's execute ends when our parent exits
            os.dup2(null, fd)
        sys.stdout = open(base + ".spool", "a", encoding="ascii")  # noqa: SIM115 - until os._exit
        until = time.monotonic() + hold_s
        while True:
            chunk = _client_read(sock, until - time.monotonic())
            if not chunk:  # pushed out by the next client (EOF) or held long enough
                break
            if _client_relay(decoder, chunk, wait) in ("done", "error"):  # the cell ended
                break
        if chunk is None or chunk:
            _client_leave(sock, decoder)
        sys.stdout.flush()
    finally:
        os._exit(0)


def _client_unspool(kernel_dir: str, wait: set):
    """Relay what holders spooled (oldest first, once each); the status it implies, or None."""
    import binascii
    import fcntl

    status = None
    for name in sorted(n for n in os.listdir(kernel_dir) if n.startswith(CLIENT_HOLD_PREFIX) and n.endswith(".lock")):
        path = os.path.join(kernel_dir, name)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            until = time.monotonic() + 10.0
            while True:  # the holder lets go once the supervisor has pushed it out for us
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > until:
                        break
                    time.sleep(0.005)
            spool = path[: -len(".lock")] + ".spool"
            try:
                with open(spool, encoding="ascii") as fh:
                    lines = fh.read().split()
                os.unlink(spool)
                os.unlink(path)
            except OSError:
                continue  # taken by a concurrent client
        finally:
            os.close(fd)
        for line in lines:
            decoder = FrameDecoder()
            decoder.feed(binascii.a2b_base64(line))
            frame = decoder.next_frame()
            if frame is not None:
                sys.stdout.write(line + "\n")
                status = _client_status(frame[0], wait, status)
    sys.stdout.flush()
    return status


def _client_pickup(kernel_dir: str, sock: socket.socket, wait: set, below=None) -> None:
    """Send the frames dropped into ``kernel_dir`` (``q-<seq>``, seq < ``below``), oldest first, once."""
    import binascii

    names = sorted(n for n in os.listdir(kernel_dir) if n.startswith(CLIENT_DROP_PREFIX) and n[2:].isdigit()
                   and (below is None or int(n[2:]) < below))
    for name in names:
        path = os.path.join(kernel_dir, name)
        mine = f"{path}.{os.getpid()}"
        try:
            os.rename(path, mine)  # claims it: a concurrent client gets ENOENT
            with open(mine, "rb") as fh:
                data = binascii.a2b_base64(fh.read())
            os.unlink(mine)
        except OSError:
            continue
        _client_note_requests(data, wait)
        sock.sendall(data)


def _client_note_requests(data: bytes, wait: set) -> None:
    decoder = FrameDecoder()
    decoder.feed(data)
    while True:
        frame = decoder.next_frame()
        if frame is None:
            return
        if frame[0].get("type") in CLIENT_REQUESTS and frame[0].get("id") is not None:
            wait.add(frame[0]["id"])


def _client_read(sock: socket.socket, left: float):
    """Bytes from ``sock``; ``b""`` at EOF or error, ``None`` when ``left`` seconds pass first."""
    if left <= 0 or not select.select([sock], [], [], left)[0]:
        return None
    try:
        return sock.recv(_READ_CHUNK)
    except OSError:
        return b""


def _client_status(header: dict, wait: set, status):
    """The poll's status after ``header`` (``done`` beats ``tool``; ``error`` beats both)."""
    kind = header.get("type")
    key = header.get("cell") if kind == "tool_call" else header.get("id")
    if kind == "error" and key is None:
        return "error"
    if (kind == "hello" and not wait) or (kind in CLIENT_REPLIES and key in wait):
        return "error" if status == "error" else "done"
    if kind == "tool_call" and key in wait:
        return status or "tool"
    return status


def _client_relay(decoder: FrameDecoder, chunk: bytes, wait: set):
    """Print each complete frame as a base64 line; return the status they imply (or None)."""
    import binascii

    decoder.feed(chunk)
    status = None
    while True:
        try:
            frame = decoder.next_frame()
        except FrameError:
            return "error"
        if frame is None:
            sys.stdout.flush()
            return status
        header, blobs = frame
        sys.stdout.write(binascii.b2a_base64(encode_frame(header, blobs), newline=False).decode() + "\n")
        status = _client_status(header, wait, status)

def main(argv) -> int:
    if len(argv) >= 3 and argv[0] == "serve" and argv[1] == "--fd":
        serve_fd(int(argv[2]))
    elif len(argv) >= 3 and argv[0] == "serve" and argv[1] == "--listen":
        serve_listen(argv[2])
    elif len(argv) >= 2 and argv[0] == "relay":
        try:
            relay(argv[1])
        except (BrokenPipeError, ConnectionError):
            pass
    elif len(argv) >= 3 and argv[0] == "client":
        return client(argv[1], argv[2])
    else:
        sys.stderr.write("usage: _kernel_runner.py serve --fd N | serve --listen SOCK | relay SOCK"
                         " | client DIR PARAMS\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
