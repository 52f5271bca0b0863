"""RunnerLink: the host's end of one kernel runner: the transport's launch record and the
channel to the runner's supervisor.

A :class:`~.handle.KernelHandle` holds at most one link at a time; a new runner (a new
generation after the runner was lost) is a new link. The link knows the runner's messages
(``hello``/``attach``, ``start_worker``, ``kill_worker``, ``keep``, ``shutdown``) and the transport's
outside ways to end it; it knows nothing of cells, losses or the handle's state.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import replace
from typing import Any, NoReturn

from ..errors import KernelStartError, TransportLostError
from .channel import Channel, ChannelClosed, Frame
from .contract import ByteStream, Launched, LaunchSpec, Transport
from .control import despite_signals
from .results import ExitInfo
from .start_errors import launch_named, no_hello

__all__ = ["RunnerLink", "say_hello"]

KILL_WORKER_TIMEOUT_S = 10.0
"""Seconds the runner gets to kill the worker and confirm (it waits up to 5 s for the reap)."""

REATTACH_RETRY_S = 0.2
"""Seconds between re-attach attempts while ``reconnect_timeout`` lasts."""

SHUTDOWN_SLACK_S = 6.0
"""Seconds on top of the runner's own shutdown steps (2 x grace) before the host stops waiting."""

REAP_SLACK_S = 3.0
"""Seconds on top of ``shutdown_grace`` that the host waits for a runner that said goodbye."""

FROZEN_CHECK_S = 0.5
"""Seconds between asking the transport whether a runner that has not answered a shutdown
request is frozen (:meth:`~.contract.Transport.frozen`); a normal answer comes in milliseconds."""


def say_hello(channel: Channel, *, token: str, attach: bool, pending: tuple[int, ...],
              timeout: float, resend_tool_calls: bool = False) -> dict[str, Any]:
    """Wait for the runner's ``hello`` (sending the ``attach`` frame first on a re-attachable stream).

    :param pending: ids of cells in flight: the runner replays their unacknowledged results.
    :param resend_tool_calls: whether the runner sends the running cell's unanswered tool calls
        again after the hello (a re-attach: the broken stream may have lost them).
    :param timeout: seconds to wait for the hello.
    :returns: the hello header (``worker_pid``, ``replayed``, ``running``).
    :raises TimeoutError: if no hello came in time.
    :raises ChannelClosed: if the stream ended first.
    """
    channel.expect("hello")
    try:
        if attach:
            channel.send({"type": "attach", "token": token, "pending": list(pending),
                          "resend_tool_calls": resend_tool_calls})
        header, _ = channel.wait("hello", timeout)
    finally:
        channel.forget("hello")
    return header


HELLO_FLOOR_S = 1.0
"""Seconds a re-attach's hello may wait at least, even past ``reconnect_timeout`` (its stream came just before)."""

EXIT_STATUS_WAIT_S = 1.0
"""Seconds a start that lost its runner waits for the runner's exit status (for the error)."""


class RunnerLink:
    """One launched runner and the channel to it (see module docstring).

    :param transport: the transport that launched it.
    :param launched: the transport's launch record.
    :param token: the kernel's attach token (sent in the ``attach`` frame, never on argv).
    :param kernel_id: the kernel's id, for names and messages.
    """

    def __init__(self, transport: Transport, launched: Launched, *, token: str, kernel_id: str) -> None:
        self.transport = transport
        self.launched = launched
        self.token = token
        self.kernel_id = kernel_id
        self.channel = Channel(launched.stream, name=f"kernel {kernel_id[:8]} ({launched.label})")
        self.ended: bool | None = None
        """After a failed :meth:`hello`: whether the runner is gone (``False``: it may still run)."""
        self.kept = False
        """Set by :meth:`detach`: the runner lives on without this host, a running cell with it."""
        self.stray = ""
        """Set by a :meth:`reattach` that reached another runner than this one: ``"; "`` and what it reached."""
        self.refused = ""
        """Set by a :meth:`reattach` refused for good (an ssh host key that changed): ``"; "`` and why."""
        self.unanswered = ""
        """Set by a :meth:`reattach` whose transport could not tell (its docker engine gone): ``"; "`` and its words."""

    @classmethod
    def launch(cls, transport: Transport, spec: LaunchSpec, *, token: str) -> RunnerLink:
        """Start a runner through ``transport`` (its hello is awaited by :meth:`hello`).

        :raises KernelStartError: if the transport cannot start it (:func:`~.start_errors.launch_named`).
        """
        return cls(transport, launch_named(transport, spec), token=token, kernel_id=spec.kernel_id)

    def hello(self, timeout: float) -> dict[str, Any]:
        """Wait for the new runner's hello; on failure end it and say why (with its log).

        :param timeout: seconds (``KernelOptions.start_timeout``).
        :raises KernelStartError: if no hello came in time, or the transport was closed meanwhile
            (:func:`~.start_errors.no_hello` says which); the runner is killed and cleaned up
            (:meth:`discard`). A runner whose kill was not confirmed (a silent or paused host)
            may still run: :attr:`ended` is ``False`` then, the error says so, and its kernel
            dir is left to it.
        """
        try:
            hello = say_hello(self.channel, token=self.token, attach=self.transport.reattachable, pending=(),
                              timeout=timeout)
        except (TimeoutError, ChannelClosed) as exc:
            self._no_hello(timeout, exc)
        if self.transport.was_closed():  # closed as it said hello (a docker exec stream outlives the close)
            self._no_hello(timeout, None)
        return hello

    def _no_hello(self, timeout: float, exc: TimeoutError | ChannelClosed | None) -> NoReturn:
        """End the new runner and raise why its start failed (``exc`` ``None``: its transport was closed)."""
        closed = self.transport.was_closed()  # its close ended the channel: the runner did nothing wrong
        died = isinstance(exc, ChannelClosed) and not closed
        code = self.transport.exit_status(self.launched, EXIT_STATUS_WAIT_S) if died else None
        log = "" if closed else self.transport.runner_log(self.launched)
        self.channel.close("no hello")
        self.ended = self.discard()
        text = no_hello(self.transport.name, timeout, exc, code, log, closed=closed,
                        left=None if self.ended else self.launched.label)
        raise KernelStartError(text, kernel_id=self.kernel_id, exit_code=code) from None

    # ------------------------------------------------------------------------------ worker
    def start_worker(self, timeout: float) -> int:
        """Ask the runner for a fresh worker.

        :param timeout: seconds for the reply.
        :returns: the new worker's pid.
        :raises KernelStartError: if the runner reports no worker.
        """
        header, _ = self.channel.request({"type": "start_worker"}, timeout)
        pid = header.get("worker_pid")
        if pid is None:
            why = f": {header['error']}" if header.get("error") else ""
            raise KernelStartError(f"kernel {self.kernel_id}: the worker did not start{why}", kernel_id=self.kernel_id)
        return int(pid)

    def kill_worker(self) -> None:
        """SIGKILL the worker's process group; returns once the runner saw it dead (or gave up).

        :raises TimeoutError: after :data:`KILL_WORKER_TIMEOUT_S` without an answer, or at once when the
            runner's host is seen frozen (a stopped runner, a paused container: it waited the 10 s)."""
        rid = self.channel.next_id()
        self.channel.expect(rid)
        try:
            self.channel.send({"type": "kill_worker", "id": rid})
            self._exit_reply(rid, KILL_WORKER_TIMEOUT_S)
        finally:
            self.channel.forget(rid)

    # ------------------------------------------------------------------------------ re-attach
    def reattach(self, pending: tuple[int, ...], *, timeout: float, hello_timeout: float,
                 stopping: Callable[[], bool] | None = None) -> dict[str, Any] | None:
        """Replace a broken channel by a new stream to the same runner, retrying for ``timeout`` s.

        :param pending: ids of cells in flight (their results are replayed; the running one's
            unanswered tool calls are sent again).
        :param hello_timeout: seconds each attempt waits for the hello (no longer than what is left of
            ``timeout``, :data:`HELLO_FLOOR_S` at least).
        :param stopping: a callable; when it returns true the retries stop (a shutdown began).
        :returns: the runner's hello, or ``None`` if the runner cannot be reached.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not (stopping and stopping()):
            channel = None
            try:
                channel = Channel(_stream_within(self, deadline, stopping), name=self.channel.name)
                for rid in pending:
                    channel.expect(rid)
                # a running runner answers at once; a frozen one (SIGSTOP) held the re-attach start_timeout
                wait = min(hello_timeout, max(deadline - time.monotonic(), HELLO_FLOOR_S))
                hello = say_hello(channel, token=self.token, attach=True, pending=pending, timeout=wait,
                                  resend_tool_calls=True)
            except (TransportLostError, TimeoutError, ChannelClosed, OSError) as exc:
                if channel is not None:
                    channel.close("re-attach failed")
                lost = exc.facts if isinstance(exc, TransportLostError) else None
                if lost is not None and (lost.get("timed_out") or not lost.get("permanent")):  # the loss names
                    self.unanswered = f"; the last re-attach: {exc}"  # it (a silent ssh host's said none) if no later try got further
                if lost is not None and lost.get("permanent"):
                    if not lost.get("timed_out"):  # a silent host is not refused: it may answer again
                        self.refused = f"; no re-attach: {exc}"  # (a changed host key, a runner seen gone)
                    return None  # e.g. the container stopped: retrying cannot help
                time.sleep(REATTACH_RETRY_S)
                continue
            self.stray = _stray(self, hello)
            if self.stray:  # its state is not this kernel's: a loss, not a re-attach
                channel.close("re-attached to another runner")
                return None
            self.channel.close("replaced by a re-attached channel")  # release the broken stream
            self.channel = channel
            return hello
        return None

    # ------------------------------------------------------------------------------ keeping
    def keep(self, orphan_timeout: float, timeout: float) -> None:
        """Make the runner outlive this host (post-mortem): it listens where the transport says
        (:meth:`Transport.keep_address`; a detached runner listens already) and its orphan timer
        becomes ``orphan_timeout`` seconds. The channel stays open until :meth:`detach`.

        :param timeout: seconds for the runner's reply.
        :raises TransportLostError: if the runner did not confirm (it is not kept). A ``BaseException``
            (Ctrl-C) in the wait kills the runner from outside (:meth:`discard`) before it propagates.
        """
        listen = self.transport.keep_address(self.launched)
        try:
            header, _ = self.channel.request({"type": "keep", "listen": listen, "orphan_timeout": orphan_timeout},
                                             timeout)
        except (TimeoutError, ChannelClosed, OSError) as exc:
            raise TransportLostError(f"kernel {self.kernel_id} did not confirm it is kept: {exc}") from None
        except BaseException:  # Ctrl-C in the wait: it may have been told to stay, and no one would own it
            self.discard_despite_signals()
            raise
        if header.get("type") != "kept":
            raise TransportLostError(f"kernel {self.kernel_id} refused to be kept: {header.get('error')}")

    def detach(self) -> None:
        """Close the channel and leave the runner running (kept: its orphan timer starts now)."""
        self.kept = True  # first: the cell waiting on the channel must not kill what was kept
        self.channel.close("detached: the kernel is kept")
        self.transport.release(self.launched)

    # ------------------------------------------------------------------------------ ending
    def alive(self) -> bool:
        """Whether the runner's supervisor still exists (a transport probe, not the channel);
        ``False`` may also mean the transport cannot tell (:meth:`seen_gone` tells them apart)."""
        return self.transport.alive(self.launched)

    def ended_how(self) -> str:
        """How the runner ended, when its transport can tell within :data:`EXIT_STATUS_WAIT_S`
        (``"killed by signal 9"``, ``"exit code 3"``); ``""`` while it runs or when it cannot tell.
        A runner killed outside closes its channel an instant before its end shows (its files are
        closed first), so a look at once would find it still alive."""
        code = self.transport.exit_status(self.launched, EXIT_STATUS_WAIT_S)
        return "" if code is None else f"killed by signal {-code}" if code < 0 else f"exit code {code}"

    def seen_gone(self) -> bool:
        """Whether the transport saw the runner gone (:meth:`Transport.seen_gone`): the only proof
        of its end; ``False`` while it runs or when the transport cannot tell."""
        return self.transport.seen_gone(self.launched)

    def kill(self) -> bool:
        """SIGKILL the runner's whole tree from outside; True when the transport saw it gone."""
        return self.transport.kill(self.launched)

    def stop(self, now: bool, grace: float) -> ExitInfo:
        """End the runner: ask it (request -> SIGTERM -> SIGKILL of the worker), else kill it.

        :param now: skip asking; SIGKILL the whole tree at once.
        :param grace: seconds each of the runner's steps waits (``shutdown_grace``).
        :returns: the step that ended it, ``confirmed`` when the runner was seen gone (a runner
            that answered the request but could not be seen ending is not). The link is discarded
            afterwards, also when a ``BaseException`` (Ctrl-C, a handler's ``SystemExit``) cuts
            the polite steps short: the runner is then killed from outside before it propagates
            (the caller has already let go of it: left here, no one would end it).
        """
        try:
            info = None if now else self._ask_to_exit(grace)
            killed, gone = None, False
            if info is None or not self.transport.reap(self.launched, grace + REAP_SLACK_S):
                gone = info is None and not now and self.seen_gone()  # it could not answer: it had ended
                killed = self.kill()  # (what it left, if anything)
        except BaseException:
            self.discard_despite_signals()
            raise
        confirmed = self.discard(killed=killed)
        if gone:  # its container stopped, or it was killed: this shutdown killed nothing
            return ExitInfo(step="already-exited", confirmed=confirmed, note="the runner was gone before it could "
                            "answer the shutdown (seen gone through the transport)")
        if info is None:
            return ExitInfo(step="sigkill" if now else "unreachable", signal=9, confirmed=confirmed,
                            note="killed from outside through the transport" if confirmed else
                            f"its kill through the transport was not confirmed: it may still run{self.refused}")
        return info if confirmed else replace(info, confirmed=False)

    def end_at_once(self, why: str) -> bool:
        """Kill the runner's tree from outside now, without a word on the channel: for a
        ``shutdown()`` that runs inside this thread's own use of it (a signal handler landed in a
        wait), which holds the channel. The channel is marked closed, so the frame below stops
        waiting; closing its stream and removing the kernel dir (:meth:`discard`) go on in a thread
        of its own, as they may need a lock that frame holds (not a daemon: the process's exit
        waits for it).

        :param why: the channel's close reason (what the frame below reports).
        :returns: whether the kill was confirmed (the runner was seen gone).
        """
        self.channel.mark_closed(why)
        killed = self.kill()
        threading.Thread(target=self.discard, kwargs={"killed": killed},
                         name=f"hermes-discard {self.kernel_id[:8]}").start()
        return killed

    def _ask_to_exit(self, grace: float) -> ExitInfo | None:
        if self.channel.closed:
            return None
        rid = self.channel.next_id()
        self.channel.expect(rid)
        try:
            self.channel.send({"type": "shutdown", "grace": grace, "id": rid})
            header, _ = self._exit_reply(rid, grace * 2 + SHUTDOWN_SLACK_S)
        except (TimeoutError, ChannelClosed, TransportLostError):
            return None
        finally:
            self.channel.forget(rid)
        step = header.get("step", "request")
        left = [(int(pid), int(ticks), str(cmd)) for pid, ticks, cmd in header.get("leftovers") or ()]
        if left:  # the leak check must see them: they carry no kernel marker and are no child of ours
            self.transport.note_leftovers(self.launched, self.kernel_id, left)
        return ExitInfo(step=step, exit_code=header.get("exit_code"), signal=header.get("signal"),
                        note="forced kill after grace" if step == "sigkill" else "",
                        leftovers=tuple(f"pid {pid}: {cmd}" for pid, _, cmd in left))

    def _exit_reply(self, rid: int, timeout: float) -> Frame:
        """The reply to shutdown request ``rid``, awaited up to ``timeout`` seconds, or less: after
        each :data:`FROZEN_CHECK_S` without it the transport is asked whether the runner's host is
        frozen (a paused container's runner answers nothing: the whole ``timeout``, 10 s by
        default, was waited for nothing).

        :raises TimeoutError: if no reply came in time, or the host is frozen.
        :raises ChannelClosed: if the channel closed first.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.channel.wait(rid, min(FROZEN_CHECK_S, max(0.0, deadline - time.monotonic())))
            except TimeoutError:
                if time.monotonic() >= deadline:
                    raise
                if self.transport.frozen(self.launched):
                    raise TimeoutError(f"its runner ({self.launched.label}) is frozen: stopped, or its host "
                                       "paused") from None

    def discard_despite_signals(self) -> bool:
        """:meth:`discard`, run to its end however many more Ctrl-C come (:func:`~.control.despite_signals`):
        for a call that a ``BaseException`` cut short, which then ends the runner it let go of."""
        return despite_signals(self.discard)

    def discard(self, killed: bool | None = None) -> bool:
        """Close the channel, kill the runner unless it was seen gone, remove its leftovers; idempotent.

        :param killed: what a :meth:`kill` just made of it, if one did (``False``: not confirmed):
            no second kill then (its refusal, e.g. a paused container's, was logged twice).
        :returns: whether the runner is gone (seen gone, or its kill confirmed): ``False`` when it
            may still run: it runs and its kill was not confirmed (its container is paused:
            frozen, not gone), or the transport cannot tell (a silent ssh host); its kernel dir is
            left to it then (a later kill, or its orphan timer, ends both).
        """
        self.channel.close()
        gone = self.transport.seen_gone(self.launched)  # (local: it also collects an exited runner)
        if not gone:
            gone = self.kill() if killed is None else killed
        if not gone:
            return False
        self.transport.cleanup(self.launched)
        return True


def _stream_within(link: RunnerLink, deadline: float, stopping: Callable[[], bool] | None) -> ByteStream:
    """``transport.reattach(launched)``, waited for until ``deadline`` or a shutdown: it runs on a
    thread of its own, as a transport's call may block (a connect to a silent host with no
    timeout held the cell past ``reconnect_timeout``, for ever if it never returned); a stream
    it gives after the wait was given up is closed.

    :raises TimeoutError: if it did not return in time. (What it raised, it raises.)
    """
    lock, done = threading.Lock(), threading.Event()
    got: list[Any] = []  # what the attempt gave (a stream, or what it raised) once it returned
    gave_up = [False]

    def attempt() -> None:
        try:
            out: Any = link.transport.reattach(link.launched)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting cell
            out = exc
        with lock:
            late = gave_up[0]
            got.append(out)
            done.set()
        if late and not isinstance(out, BaseException):  # nobody takes it any more
            _close_quietly(out)

    threading.Thread(target=attempt, name=f"hermes-reattach {link.kernel_id[:8]}", daemon=True).start()
    try:
        while not done.wait(max(0.0, min(REATTACH_RETRY_S, deadline - time.monotonic()))):
            if time.monotonic() >= deadline or (stopping and stopping()):
                raise TimeoutError(f"the {link.transport.name} transport's reattach did not return in time")
    except BaseException:  # given up (or Ctrl-C): a stream it gives is closed, now or when it comes
        with lock:
            gave_up[0] = True
            late = got[0] if got and not isinstance(got[0], BaseException) else None
        if late is not None:
            _close_quietly(late)
        raise
    if isinstance(got[0], BaseException):
        raise got[0]
    return got[0]


def _stray(link: RunnerLink, hello: dict[str, Any]) -> str:
    """``""`` when ``hello`` is ``link``'s runner's (its pid and kernel id, where it says them); else
    ``"; "`` and what the re-attach reached instead (a transport that started a fresh runner, say)."""
    pid, kernel_id = hello.get("pid"), hello.get("kernel_id")
    if (kernel_id is None or kernel_id == link.kernel_id) and (pid is None or link.launched.pid is None
                                                              or pid == link.launched.pid):
        return ""
    return (f"; the re-attach reached another runner (pid {pid}, kernel {kernel_id}), not this kernel's "
            f"(pid {link.launched.pid}): its state is not this kernel's")


def _close_quietly(stream: ByteStream) -> None:
    with suppress(Exception):  # a stream nobody waits for any more: its close cannot matter
        stream.close()
