"""``server --stdio``: the kernel server of a container or ssh host, over the stream the transport holds.

The docker and ssh transports start it once per kernel host with one exec; its stdin and stdout
are that exec's stream, and every later kernel start is one message on it (no exec per kernel).
Each kernel it forks is what ``serve --listen`` would make (:mod:`.serve`): its own session, a
0700 kernel dir holding a link to the runner file, a unix socket ``<dir>/sock`` that clients
attach to with the kernel's token, the orphan timer. The server attaches to that socket itself and
relays it as one channel of the stream; a re-attach after a drop goes the old way (a relay exec),
so nothing about faults and re-attach changes. After a spawn, once no frame waits, it forks the
next kernel ahead (its *spare*, :mod:`.spare`, as the local server does); the next spawn hands it
the kernel's listening socket.

Frames on the stream are those of :mod:`.frames`. The first one from the host is the server's
config; the server answers ``hello``. Then::

    host -> server  {"type": "spawn", "id": n, "config": {...}}    -> spawned {"id", "pid", "chan"} | error
                    (an error with ``"stale": true``: a site dir changed, or the server's runner file is
                    gone, start a new server; see ``server.py`` and :meth:`RemoteKernelServer.runner_gone`)
    host -> server  {"type": "data", "chan": c} + blob             the bytes, to kernel c's socket
    host -> server  {"type": "close", "chan": c}                   detach (the kernel's orphan clock starts)
    host -> server  {"type": "alive", "id": n, "pid": p}           -> {"type": "alive", "id", "alive": bool}
    host -> server  {"type": "rmdir", "id": n, "dir": d}           -> {"type": "removed", "id"} (only dirs it made)
    host -> server  {"type": "probe", "id": n, "script", "argv"[, "alarm_s"]}  -> {"type": "probed", "id", "exit_code", "output"}
    server -> host  {"type": "data", "chan": c} + blob             bytes from kernel c
    server -> host  {"type": "closed", "chan": c}                  kernel c's socket closed
    server -> host  {"type": "exited", "pid": p, "exit_code", "signal"}   a kernel ended

A ``probe`` runs one of the transport's scan scripts (the leak checker's process and dir scan)
in a forked child, as ``python -c SCRIPT ARGV...`` by an exec would: the same user and pid
namespace, its stdout (decoded, invalid bytes replaced) and exit code; the child is ended by
SIGALRM after ``alarm_s`` seconds (at most and by default :data:`PROBE_ALARM_S`). It saves the leak checker an exec per snapshot.

EOF on stdin (the host died, the stream broke, the host is done) ends the server at once: each
kernel then lives on its own orphan timer, exactly as when a relay exec ends.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import socket
import sys
import time
import traceback

from .attach import unix_call
from .frames import READ_CHUNK, FrameDecoder, FrameError, encode_frame
from .procfs import become_subreaper
from .server import ForkingServer, enter_kernel
from .serve import bind_listener, run_listening, write_pidfile
from .trees import remove_tree

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .frames import Header

SOCKET_NAME = "sock"
#: Seconds a probe's child may run before SIGALRM ends it (the server waits for it meanwhile).
PROBE_ALARM_S = 10
#: Bytes of a probe's output sent back; the rest is read and dropped.
MAX_PROBE_OUTPUT = 1 << 20


def serve_server_stdio() -> None:
    """Run the remote kernel server on fds 0 and 1 (see module docstring)."""
    decoder = FrameDecoder()
    while True:
        chunk = os.read(0, READ_CHUNK)
        if not chunk:
            return
        decoder.feed(chunk)
        frame = decoder.next_frame()
        if frame is not None:
            break
    config = frame[0].get("config") or {}
    become_subreaper()  # what its kernels leave behind stays its own: the host scan finds it
    if config.get("sweep_siblings"):
        sweep_dead_servers_dirs(config.get("server_dir"))
    RemoteKernelServer(config, decoder).run()


#: Seconds a sibling server dir must be older than to be swept: a younger one may be another
#: transport's, whose server is not started in it yet.
STALE_SERVER_DIR_S = 60.0


def sweep_dead_servers_dirs(own: str | None) -> None:
    """Remove the sibling ``server-*`` dirs of ``own`` that no process works in (their server was
    SIGKILLed, or the host rebooted: a server that exits removes its own dir) and that are older
    than :data:`STALE_SERVER_DIR_S`. Never raises. For an ssh host's private kernel root (config
    ``sweep_siblings``): only its login user's servers work there, and it can read where they do."""
    if not own:
        return
    parent, now = os.path.dirname(own), time.time()
    try:
        stale = {(st.st_dev, st.st_ino): e.path for e in os.scandir(parent)
                 if e.name.startswith("server-") and e.path != own and e.is_dir(follow_symlinks=False)
                 and now - (st := e.stat(follow_symlinks=False)).st_mtime > STALE_SERVER_DIR_S}
        if stale:
            for name in os.listdir("/proc"):  # a dir is told by its inode: a path may differ by a symlink
                try:
                    cwd = os.stat(f"/proc/{name}/cwd")
                except OSError:
                    continue
                stale.pop((cwd.st_dev, cwd.st_ino), None)
            for path in stale.values():
                remove_tree(path)
    except OSError:
        pass


class RemoteKernelServer(ForkingServer):
    """The mux loop over stdin/stdout (see module docstring).

    :param config: ``idle_timeout``, ``server_dir``, ``runner`` (the runner file each kernel dir
        links to), ``log`` (the server's own stderr); ``sweep_siblings`` is read before it
        starts (:func:`sweep_dead_servers_dirs`).
    :param decoder: the stdin decoder, holding what came after the config frame.
    """

    def __init__(self, config: dict[str, Any], decoder: FrameDecoder) -> None:
        super().__init__(config)
        _stderr_to(config.get("log"))
        self.decoder = decoder
        self.chans: dict[int, socket.socket] = {}
        self.next_chan = 1
        self.dirs: set[str] = set()  # kernel dirs made here: the only ones "rmdir" removes
        self.sel.register(0, selectors.EVENT_READ, "in")
        self.pending = 0  # a frame waiting on stdin defers the next spare
        self.say({"type": "hello", "pid": os.getpid(), "python": sys.version.split()[0],
                  "home": os.path.expanduser("~"), "refusal": self.refusal})
        self.on_frames()  # what the host sent right behind the config

    def say(self, header: Header, blobs: tuple[bytes, ...] = ()) -> None:
        """Write one frame to the host (stdout)."""
        view = memoryview(encode_frame(header, blobs))
        try:
            while view:
                view = view[os.write(1, view):]
        except OSError:
            self.stopping = True

    def on_ready(self, what: Any, source: Any) -> None:
        if what == "in":
            self.on_stdin()
        else:
            self.on_kernel(what)

    def on_stdin(self) -> None:
        try:
            chunk = os.read(0, READ_CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            self.stopping = True
            return
        self.decoder.feed(chunk)
        self.on_frames()

    def on_frames(self) -> None:
        while not self.stopping:
            try:
                frame = self.decoder.next_frame()
            except FrameError as exc:
                self.say({"type": "error", "id": None, "error": f"bad frame: {exc}"})
                self.stopping = True
                return
            if frame is None:
                return
            self.on_message(*frame)

    def on_message(self, msg: Header, blobs: list[bytes]) -> None:
        kind = msg.get("type")
        if kind == "data":
            sock = self.chans.get(msg.get("chan"))  # type: ignore[arg-type]
            if sock is not None and blobs:
                try:
                    sock.sendall(blobs[0])
                except OSError:
                    self.drop(msg["chan"], tell=True)
        elif kind == "close":
            self.drop(msg.get("chan"), tell=False)  # type: ignore[arg-type]
        elif kind == "spawn":
            self.last_request = time.monotonic()
            reply = self.spawn(msg)
            self.say(reply)
            if reply["type"] == "spawned" and reply["chan"] not in self.chans:  # it ended before the attach
                self.say({"type": "closed", "chan": reply["chan"]})
        elif kind == "alive":
            self.reap()
            self.say({"type": "alive", "id": msg.get("id"), "alive": msg.get("pid") in self.children})
        elif kind == "rmdir":
            self.say(self.rmdir(msg))
        elif kind == "probe":
            self.say(self.probe(msg))
        else:
            self.say({"type": "error", "id": msg.get("id"), "error": f"unknown message {kind!r}"})

    def on_kernel(self, chan: int) -> None:
        sock = self.chans.get(chan)
        if sock is None:
            return
        try:
            data = sock.recv(READ_CHUNK)
        except OSError:
            data = b""
        if data:
            self.say({"type": "data", "chan": chan}, (data,))
        else:
            self.drop(chan, tell=True)

    def drop(self, chan: int, *, tell: bool) -> None:
        """Stop relaying channel ``chan`` (``tell``: let the host know it closed)."""
        sock = self.chans.pop(chan, None)
        if sock is None:
            return
        self.sel.unregister(sock)
        sock.close()
        if tell:
            self.say({"type": "closed", "chan": chan})

    # ------------------------------------------------------------------------------ kernels
    def spawn(self, msg: Header) -> Header:
        """Fork the kernel ``msg`` asks for and attach to it as channel ``chan``."""
        rid, config = msg.get("id"), msg.get("config")
        if not isinstance(config, dict) or not config.get("kernel_dir"):
            return {"type": "error", "id": rid, "error": "spawn needs a config with a kernel_dir"}
        stale = self.stale(rid) or self.runner_gone(rid)
        if stale:
            return stale
        why = self.refuse(config)
        if why:
            return {"type": "error", "id": rid, "error": why}
        kdir = str(config["kernel_dir"])
        path = os.path.join(kdir, SOCKET_NAME)
        try:
            runner = _make_kernel_dir(kdir, self.config.get("runner"))
        except FileExistsError:  # not made here: never removed here either
            return {"type": "error", "id": rid, "error": f"the kernel dir {kdir} exists already: left as it is"}
        except OSError as exc:
            return {"type": "error", "id": rid, "error": f"could not make the kernel dir {kdir}: {exc}"}
        try:
            listener = bind_listener(path)
        except OSError as exc:
            remove_tree(kdir)
            return {"type": "error", "id": rid, "error": f"could not make the kernel dir {kdir}: {exc}"}
        config = dict(config, listen=path)
        try:
            pid = self._start_kernel(config, listener)
        except OSError as exc:
            remove_tree(kdir)
            return {"type": "error", "id": rid, "error": str(exc)}
        finally:
            listener.close()
        self.dirs.add(kdir)
        return dict(self.attach(path), type="spawned", id=rid, pid=pid, runner=runner)

    def runner_gone(self, rid: Any) -> Header | None:
        """The refusal of a spawn once the runner file each kernel dir links to is gone (a cell removed
        the kernel root, ``rm -rf /tmp/*``): ``stale``, so that the host starts a new server, its runner
        put anew, which forks the kernel; this one serves the kernels it has until they end. Every later
        start was refused with ``could not make the kernel dir ...: No such file or directory`` and
        spawned instead, its ``kernel.note`` saying so, for the transport's whole life. Its spare
        goes at once (:meth:`retire`)."""
        runner = self.config.get("runner")
        if not runner or os.path.isfile(runner):
            return None
        self.retire()
        return {"type": "error", "id": rid, "stale": True,
                "error": f"the kernel server's runner file {runner} is gone: start a new server"}

    def _start_kernel(self, config: dict[str, Any], listener: socket.socket) -> int:
        """The pid of kernel ``config``'s supervisor, listening on ``listener``: the spare made it,
        or a fork.

        :raises OSError: if the spare failed after it may have touched the listener, or the fork failed."""
        pid = self.from_spare(config, listener.fileno())
        if pid is not None:
            return pid
        try:
            return self.fork(lambda: enter_kernel(config, listener.fileno(), lambda: _serve(config, listener),
                                                  ("serve", "--listening-fd")))
        except OSError as exc:
            raise OSError(f"fork failed: {exc}") from None

    def rmdir(self, msg: Header) -> Header:
        """Remove a kernel dir this server made (the host's cleanup, without an exec)."""
        kdir = msg.get("dir")
        if kdir not in self.dirs:
            return {"type": "error", "id": msg.get("id"), "error": f"{kdir!r} is not a kernel dir of this server"}
        self.dirs.discard(kdir)  # type: ignore[arg-type]
        if not remove_tree(str(kdir)):  # a cell left what cannot be removed: the leak check must still look
            return {"type": "error", "id": msg.get("id"), "error": f"could not remove all of {kdir}"}
        return {"type": "removed", "id": msg.get("id")}

    def probe(self, msg: Header) -> Header:
        """Run a probe script in a forked child and wait for it (see module docstring)."""
        rid, script, argv = msg.get("id"), msg.get("script"), msg.get("argv") or []
        if not isinstance(script, str) or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            return {"type": "error", "id": rid, "error": "probe needs a script and a list of string arguments"}
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError as exc:
            os.close(r)
            os.close(w)
            return {"type": "error", "id": rid, "error": f"fork failed: {exc}"}
        if pid == 0:
            os.close(r)
            alarm = msg.get("alarm_s")
            self._run_probe(script, argv, w, alarm if isinstance(alarm, int) and 0 < alarm < PROBE_ALARM_S else PROBE_ALARM_S)
        os.close(w)
        kept, chunk = bytearray(), b"-"
        with open(r, "rb", buffering=0) as out:
            while chunk:
                chunk = out.read(READ_CHUNK)
                kept += chunk[:max(0, MAX_PROBE_OUTPUT - len(kept))]
        _, status = os.waitpid(pid, 0)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return {"type": "probed", "id": rid, "exit_code": code, "output": kept.decode("utf-8", "replace")}

    def _run_probe(self, script: str, argv: list[str], out: int, alarm_s: int) -> None:
        """The probe's child: stdout on ``out``, stdin on /dev/null, the server's fds closed. Never returns."""
        code = 1
        try:
            signal.set_wakeup_fd(-1)
            self.close_in_child()
            signal.alarm(alarm_s)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out, 1)
            sys.argv = ["-c", *argv]
            exec(compile(script, "<probe>", "exec"), {"__name__": "__main__"})
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        except BaseException:  # noqa: BLE001 - its traceback goes to the server's log
            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
            finally:
                os._exit(code)

    def attach(self, path: str) -> Header:
        """Connect to a kernel's socket as a new channel (it listens already: the connect is queued).
        A kernel that ended already (a cwd it cannot enter; a spare's claim ends it sooner than a
        fork) refuses it: its channel is none of :attr:`chans`, said closed after the spawn's answer,
        as if it ended just after the attach (the refusal ended the server, and every kernel's channel)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        chan, self.next_chan = self.next_chan, self.next_chan + 1
        try:
            unix_call(sock, "connect", path)  # a path over 107 bytes (a long home) too, as it was bound
        except OSError:
            sock.close()
            return {"chan": chan}
        self.chans[chan] = sock
        self.sel.register(sock, selectors.EVENT_READ, chan)
        return {"chan": chan}

    def on_exit(self, pid: int, status: int) -> None:
        code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        self.say({"type": "exited", "pid": pid, "exit_code": code, "signal": sig})

    def close_in_child(self) -> None:
        super().close_in_child()
        for sock in self.chans.values():
            sock.close()


def _serve(config: dict[str, Any], listener: socket.socket) -> None:
    write_pidfile(config)
    run_listening(config, listener)


def _make_kernel_dir(kdir: str, runner: str | None) -> str | None:
    """Make ``kdir`` (0700; its parent 0711 if missing) holding a link to the server's ``runner``
    file (a re-attach runs its ``relay`` from there); the link's path, or ``None``.

    :raises FileExistsError: if ``kdir`` exists (it is left as it is).
    :raises OSError: if it cannot be made, or the link in it (then the dir made is removed).
    """
    os.makedirs(os.path.dirname(kdir), mode=0o711, exist_ok=True)
    os.mkdir(kdir, 0o700)
    try:
        os.chmod(kdir, 0o700)  # whatever the login's umask (0277 made it 0500: no link could go in)
    except OSError:
        os.rmdir(kdir)
        raise
    if not runner:
        return None
    target = os.path.join(kdir, os.path.basename(runner))
    try:
        try:
            os.link(runner, target)
        except OSError:
            shutil.copyfile(runner, target)
            os.chmod(target, 0o600)
    except OSError:
        remove_tree(kdir)
        raise
    return target


def _stderr_to(log: str | None) -> None:
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(fd, 2)
        os.close(fd)
