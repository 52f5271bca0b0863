"""The host's side of a remote kernel server (``kernel/runner/server_remote.py``) over one stream.

The docker and ssh transports start one server per kernel host with one exec and keep its stream;
a kernel start is then one ``spawn`` message, and the kernel's channel is a :class:`MuxStream`
riding that stream (no exec, no ssh session per kernel). One reader thread per server (named
``hermes-shared ...``: it belongs to the transport, not to a test) hands each frame to its
kernel's stream, to the waiting request, or to the record of ended kernels.

Whatever goes wrong with a server (it refused, it exited, its stream broke) is a
:class:`~pytest_hermes_kernel.errors.KernelServerUnavailable` for the launch that asked; the transport then
starts the runner by a plain spawn and says so in ``kernel.note``. Forked kernels do not depend on the server:
when its stream ends, theirs end too and the handle re-attaches by a relay exec, each runner keeping its state.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

from ..errors import KernelServerUnavailable
from ..kernel.contract import ByteStream
from ..kernel.results import FrameDecoder, FrameError, encode_frame
from .detached import KILL_FORKED_SCRIPT

Header = dict[str, Any]
#: Seconds for a server's ``hello`` (its interpreter starts and imports the runner first).
HELLO_TIMEOUT_S = 30.0
#: Seconds for the answer to a ``spawn`` (a mkdir, a bind and a fork).
SPAWN_TIMEOUT_S = 15.0
#: Seconds for the answer to a ``probe`` (a fork and a scan of ``/proc``; the server ends the
#: child at 10 s). A server silent that long is closed: the caller runs the probe by exec.
PROBE_TIMEOUT_S = 12.0
#: Ended kernels whose exit a server's host side keeps, the newest: each is dropped at its kernel's
#: cleanup; this bounds those never cleaned up (one per kernel forked, for ever, before).
EXITS_KEPT = 256
#: Seconds between looks at whether a silent server's host is frozen (``frozen`` of :meth:`RemoteServer.request`).
FROZEN_LOOK_S = 0.5


class RemoteServer:
    """One remote kernel server and the stream to it (see module docstring).

    :param stream: the server exec's stream (its stdin/stdout).
    :param name: a short text for thread names and messages (``"docker ab12"``).
    :param config: the server config (``idle_timeout``, ``server_dir``, ``runner``, ``log``).
    :raises KernelServerUnavailable: if it does not say hello within :data:`HELLO_TIMEOUT_S`.
    """

    def __init__(self, stream: ByteStream, *, name: str, config: dict[str, Any],
                 hello_timeout: float = HELLO_TIMEOUT_S) -> None:
        self.stream = stream
        self.name = name
        self.gone = ""
        self.retired = ""  # why it forks no more kernels (a site dir changed): it serves those it has
        self.hello: Header | None = None
        self._send_lock = threading.Lock()
        self._cond = threading.Condition()
        self._replies: dict[int, Header] = {}
        self._chans: dict[int, MuxStream] = {}
        self._exited: dict[int, tuple[int | None, int | None]] = {}
        self._abandoned: dict[int, Header] = {}  # requests whose caller left before the answer (Ctrl-C), by id
        self.seen_frozen: Callable[[], bool] | None = None  # set by its pool: the ``frozen`` of every request
        self._ids = itertools.count(1)
        try:
            self.send_frame({"type": "config", "config": config})
        except OSError as exc:  # it ended at once (no such interpreter, say): the caller spawns instead
            self.close()
            raise KernelServerUnavailable(f"the kernel server on {name} ended before it had its config: {exc}") from exc
        self._reader = threading.Thread(target=self._read, name=f"hermes-shared kernel server {name}", daemon=True)
        self._reader.start()
        with self._cond:
            self._cond.wait_for(lambda: self.hello is not None or self.gone, hello_timeout)
        if self.hello is None:
            self.close()
            raise KernelServerUnavailable(f"the kernel server on {name} did not say hello: {self.gone or 'no answer'}")
        if self.hello.get("refusal"):
            self.close()
            raise KernelServerUnavailable(f"the kernel server on {name} cannot fork kernels: {self.hello['refusal']}")

    @property
    def usable(self) -> bool:
        return not self.gone

    @property
    def pid(self) -> int | None:
        return None if self.hello is None else self.hello.get("pid")

    # ------------------------------------------------------------------------------ requests
    def send_frame(self, header: Header, blobs: tuple[bytes, ...] = ()) -> None:
        """Send one frame to the server.

        :raises OSError: if the stream is gone.
        """
        data = encode_frame(header, blobs)
        with self._send_lock:
            if self.gone:
                raise BrokenPipeError(self.gone)
            self.stream.send(data)

    def request(self, message: Header, timeout: float, frozen: Callable[[], bool] | None = None) -> Header:
        """Send ``message`` with a fresh id and wait for the reply with that id.

        :param frozen: asked every :data:`FROZEN_LOOK_S` while no reply came: true when the server's
            host is seen frozen (a paused container), which answers nothing until it thaws;
            ``None``: :attr:`seen_frozen`, which its pool sets (a stopped server held a
            shutdown 12 s per answer).
        :raises KernelServerUnavailable: if the stream breaks, no reply comes in time, or ``frozen``.
        """
        frozen = frozen or self.seen_frozen
        rid = next(self._ids)
        try:
            self.send_frame(dict(message, id=rid))
        except OSError as exc:  # not sent: asking another server is safe (this one is of no use now)
            self.close(f"its stream broke: {type(exc).__name__}: {exc}")
            raise KernelServerUnavailable(f"the kernel server on {self.name} is gone: {exc}", sent=False) from None
        except BaseException:  # Ctrl-C as it went out: it may have gone out
            self._abandon(rid, message)
            raise
        deadline = time.monotonic() + timeout
        while True:
            left = max(0.0, deadline - time.monotonic())
            with self._cond:
                try:
                    done = self._cond.wait_for(lambda: rid in self._replies or self.gone,
                                               left if frozen is None else min(FROZEN_LOOK_S, left))
                except BaseException:  # Ctrl-C while waiting: the answer comes to no one
                    self._abandon(rid, message)
                    raise
                if done or time.monotonic() >= deadline:
                    reply = self._replies.pop(rid, None)
                    break
            try:
                seen = frozen is not None and frozen()  # the whole timeout was waited: 12 s for a probe, 15 s for a spawn
            except BaseException:  # Ctrl-C during the look (an exec): as in the wait, the answer comes to no one
                self._abandon(rid, message)
                raise
            if seen:
                self._abandon(rid, message)  # kept: it answers once thawed
                raise KernelServerUnavailable(f"the kernel server on {self.name} is frozen (stopped, or its host paused)")
        if reply is None:
            why = self.gone or f"no answer within {timeout} s"
            if not self.gone:
                self.close()  # a silent server is no use to anyone
            raise KernelServerUnavailable(f"the kernel server on {self.name}: {why}")
        return reply

    def spawn(self, config: dict[str, Any], timeout: float = SPAWN_TIMEOUT_S,
              frozen: Callable[[], bool] | None = None) -> tuple[int, MuxStream, str | None]:
        """Have the server fork the kernel of runner ``config``.

        :returns: its pid, the stream of its channel, and the path of the runner file in its dir.
        :raises KernelServerUnavailable: if the server refused or is gone.
        """
        reply = self.request({"type": "spawn", "config": config}, timeout, frozen)
        if reply.get("stale"):  # nothing was forked: a new server (on the site dirs as they are now) may
            self.retired = str(reply.get("error"))
        if reply.get("type") != "spawned":
            raise KernelServerUnavailable(f"the kernel server on {self.name} refused: {reply.get('error', reply)}",
                                          sent=not self.retired)
        return int(reply["pid"]), reply["_stream"], reply.get("runner")

    def exited(self, pid: int) -> bool:
        """Whether the server reported kernel ``pid`` ended (its dir is removed then)."""
        with self._cond:
            return pid in self._exited

    def wait_exit(self, pid: int, timeout: float) -> tuple[int | None, int | None] | None:
        """Wait up to ``timeout`` seconds for kernel ``pid`` to end: its ``(exit code, signal)`` as the
        server reported them; ``None`` if it did not end, or if the server is gone."""
        with self._cond:
            self._cond.wait_for(lambda: pid in self._exited or self.gone, timeout)
            return self._exited.get(pid)

    def forget_exit(self, pid: int) -> None:
        """Drop the record of kernel ``pid``'s end (its cleanup is done: nobody asks again)."""
        with self._cond:
            self._exited.pop(pid, None)

    def remove_dir(self, kernel_dir: str, timeout: float = SPAWN_TIMEOUT_S) -> bool:
        """Have the server remove a kernel dir it made; ``False`` if it would not or could not."""
        try:
            return self.request({"type": "rmdir", "dir": kernel_dir}, timeout).get("type") == "removed"
        except KernelServerUnavailable:
            return False

    def alive(self, pid: int, timeout: float = SPAWN_TIMEOUT_S) -> bool:
        """Whether kernel ``pid`` (one of the server's) still runs.

        :raises KernelServerUnavailable: if the server cannot tell (gone, silent).
        """
        if self.exited(pid):
            return False
        return bool(self.request({"type": "alive", "pid": pid}, timeout).get("alive"))

    def probe(self, script: str, args: list[str], timeout: float = PROBE_TIMEOUT_S,
              alarm_s: int | None = None, frozen: Callable[[], bool] | None = None) -> tuple[int | None, bytes]:
        """Run a probe ``script`` (``python -c script args...``) in a fork of the server: no exec.

        :param alarm_s: whole seconds after which SIGALRM ends the script (the server's cap, 10 s, by default).

        :returns: its exit code (``-N``: signal ``N``) and stdout (at most 1 MiB; UTF-8, invalid
            bytes replaced).
        :raises KernelServerUnavailable: if the server cannot run it (gone, silent, refused).
        """
        message = {"type": "probe", "script": script, "argv": list(args)}
        if alarm_s is not None:
            message["alarm_s"] = alarm_s
        reply = self.request(message, timeout, frozen)
        if reply.get("type") != "probed":
            raise KernelServerUnavailable(f"the kernel server on {self.name} did not run the probe: "
                                          f"{reply.get('error', reply)}")
        return reply.get("exit_code"), str(reply.get("output", "")).encode("utf-8")

    def _abandon(self, rid: int, message: Header) -> None:
        """The caller of request ``rid`` (``message``) left before its answer (Ctrl-C in a launch):
        a spawn's kernel then belongs to no one, and is ended once its answer says which it is."""
        with self._cond:
            reply = self._replies.pop(rid, None)
            if reply is None:
                self._abandoned[rid] = message
        if reply is not None:
            self._end_unclaimed(reply, message)

    def _end_unclaimed(self, reply: Header, request: Header) -> None:
        """End the kernel of a ``spawned`` answer nobody took, from a thread of its own (the reader thread
        must not wait for the probe's answer): stop relaying its channel, kill its session through the
        server (a probe runs :data:`.detached.KILL_FORKED_SCRIPT`: the kernel too if it has not made its
        session yet), then have the server remove its dir. Before, it ran until its orphan timer."""
        if reply.get("type") != "spawned":
            return

        def end() -> None:
            if isinstance(reply.get("chan"), int):
                self.detach(reply["chan"])
            if isinstance(reply.get("pid"), int):
                with contextlib.suppress(KernelServerUnavailable):
                    self.probe(KILL_FORKED_SCRIPT, [str(reply["pid"])])
            kernel_dir = (request.get("config") or {}).get("kernel_dir")
            if kernel_dir:
                self.remove_dir(str(kernel_dir))

        # not a daemon: a Ctrl-C usually ends the program next, and its exit waits for this
        threading.Thread(target=end, name=f"hermes-shared end unclaimed kernel {self.name}").start()

    # ------------------------------------------------------------------------------ reading
    def _read(self) -> None:
        decoder = FrameDecoder()
        why = "its stream ended"
        try:
            while True:
                data = self.stream.recv(None)
                if not data:
                    break
                decoder.feed(data)
                while (frame := decoder.next_frame()) is not None:
                    self._dispatch(*frame)
        except (OSError, FrameError) as exc:
            why = f"its stream broke: {type(exc).__name__}: {exc}"
        finally:
            self.close(why)  # its stream is of no use now: release it (its socket or channel) at once

    def _dispatch(self, header: Header, blobs: list[bytes]) -> None:
        kind = header.get("type")
        unclaimed: tuple[Header, Header] | None = None
        if kind == "data":
            with self._cond:
                stream = self._chans.get(header.get("chan"))  # type: ignore[arg-type]
            if stream is not None and blobs:
                stream.feed(blobs[0])
            return
        with self._cond:
            if kind == "closed":
                stream = self._chans.pop(header.get("chan"), None)  # type: ignore[arg-type]
                if stream is not None:
                    stream.end()
            elif kind == "exited":
                self._exited[header["pid"]] = (header.get("exit_code"), header.get("signal"))
                while len(self._exited) > EXITS_KEPT:
                    del self._exited[next(iter(self._exited))]
            elif kind == "hello":
                self.hello = header
            else:
                if kind == "spawned":  # its stream exists before any of its data can come, and goes with
                    # the reply: a kernel that ends at once (a cwd it cannot enter) has its channel
                    # closed, and out of _chans, before the reply is read (a KeyError in spawn())
                    header["_stream"] = self._chans[header["chan"]] = MuxStream(self, header["chan"])
                    self._exited.pop(header.get("pid"), None)  # a pid used again: an old kernel's end is not this one's
                request = self._abandoned.pop(header.get("id"), None)  # type: ignore[arg-type]
                if request is not None:
                    unclaimed = (header, request)
                else:
                    self._replies[header.get("id")] = header  # type: ignore[index]
            self._cond.notify_all()
        if unclaimed is not None:
            self._end_unclaimed(*unclaimed)

    def _end(self, why: str) -> None:
        with self._cond:
            self.gone = self.gone or why
            streams, self._chans = list(self._chans.values()), {}
            self._cond.notify_all()
        for stream in streams:
            stream.end()

    def detach(self, chan: int) -> None:
        """A kernel's stream was closed by the host: stop relaying it (the kernel's orphan clock starts)."""
        with self._cond:
            self._chans.pop(chan, None)
        try:
            self.send_frame({"type": "close", "chan": chan})
        except OSError:
            pass

    def close(self, why: str = "closed") -> None:
        """End the server's lease (it exits at once; kernels live on their own orphan timers).

        :param why: what :attr:`gone` says if the server was not gone already.
        """
        self._end(why)
        try:
            self.stream.close()
        except OSError:
            pass


class MuxStream:
    """A kernel's channel as one channel of its server's stream (a :class:`ByteStream`).

    ``close`` detaches (the runner keeps its state and its orphan clock runs), as closing a relay
    exec's stream would; ``recv`` returns ``b""`` once the server said the kernel's socket closed
    or the server's stream ended.
    """

    #: a long frame may come in pieces, each sent whole and in order (``Channel.send``)
    sends_pieces = True

    def __init__(self, server: RemoteServer, chan: int) -> None:
        self.server = server
        self.chan = chan
        self._chunks: collections.deque[bytes] = collections.deque()
        self._cond = threading.Condition()
        self._eof = False
        self._closed = False

    def send(self, data: bytes) -> None:
        """:raises BrokenPipeError: if the channel or the server's stream has ended."""
        if self._eof:
            raise BrokenPipeError(f"kernel channel {self.chan} on {self.server.name} has ended")
        self.server.send_frame({"type": "data", "chan": self.chan}, (data,))

    def recv(self, timeout: float | None) -> bytes:
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        with self._cond:
            while not self._chunks and not self._eof:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError
                self._cond.wait(left)
            if self._chunks:
                data = b"".join(self._chunks)
                self._chunks.clear()
                return data
            return b""

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = self._eof = True
            self._cond.notify_all()
        self.server.detach(self.chan)

    def feed(self, data: bytes) -> None:
        """Bytes from the kernel (the server's reader thread)."""
        with self._cond:
            if not self._closed:
                self._chunks.append(data)
                self._cond.notify_all()

    def end(self) -> None:
        """The kernel's socket closed, or the server's stream ended."""
        with self._cond:
            self._eof = True
            self._cond.notify_all()


def stat_says_stopped(stat: bytes) -> bool:
    """Whether a ``/proc/<pid>/stat`` line says the process is stopped (``T``: SIGSTOP; ``t``: traced)."""
    return stat.rsplit(b")", 1)[-1].split()[:1] in ([b"T"], [b"t"])


def runner_stopped(read: Callable[[], tuple[int | None, bytes, bytes]]) -> bool:
    """Whether ``read()`` (a command ``cat /proc/<pid>/stat`` where the process runs: its exit code,
    stdout, stderr) says it is stopped; ``False`` when it cannot tell (never raises)."""
    try:
        code, out, _ = read()
    except Exception:  # noqa: BLE001 - cannot tell: not seen stopped
        return False
    return code == 0 and stat_says_stopped(out)
