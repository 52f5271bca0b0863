"""KernelHandle: one kernel on one transport: execute, interrupt, restart, shutdown.

The handle is transport-neutral. It speaks the frame protocol to the kernel runner's
supervisor (see :mod:`.runner`) over whatever byte stream the transport opened, runs the
timeout ladder of :mod:`.watchdog`, serves tool calls under the running cell's authority and
turns every loss of state into a reported ``state_lost`` with a reason.
"""

from __future__ import annotations

import math
import os
import secrets
import threading
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..errors import (CellInterrupted, ConfigError, CellTimeoutError, KernelAbandoned, KernelDiedError, KernelResetAfterTimeout,
                      KernelResetFailed, KernelShutdownError, KernelStartError, ToolCallRefused, TransportLostError)
from .channel import Channel, ChannelClosed
from .options import KernelOptions
from .output import MARKER_RESERVE_BYTES, decode_capture, scrub_env, secret_values
from .results import CellResult, ExitInfo, KernelInfo, Reason
from .rpc import CellAuthority, ToolTable
from .watchdog import CellBudget

if TYPE_CHECKING:
    from .contract import Launched, Transport

_in_tool = threading.local()
"""``kernel``: the handle whose tool this thread is running (to refuse a cell that would wait for itself)."""

_OUTCOME_ERRORS: dict[str, type[CellTimeoutError]] = {
    "interrupted": CellInterrupted, "reset": KernelResetAfterTimeout,
    "reset_failed": KernelResetFailed, "abandoned": KernelAbandoned,
}


class KernelHandle:
    """A kernel: a persistent namespace behind a transport.

    Cells on one handle are serialized. ``interrupt``, ``cancel``, ``restart`` and ``shutdown``
    may be called from other threads while a cell runs.
    """

    def __init__(self, transport: Transport, options: KernelOptions | None = None, *,
                 tools: ToolTable | Mapping[str, Any] | None = None, kernel_id: str | None = None,
                 owner: str | None = None) -> None:
        self.transport = transport
        self.options = options or KernelOptions()
        self.tools = tools if isinstance(tools, ToolTable) else ToolTable(tools)
        self.kernel_id = kernel_id or uuid.uuid4().hex
        self.owner = owner
        self.token = secrets.token_urlsafe(24)
        self.generation = 0
        self.restart_count = 0
        self.cells_run = 0
        self.exit_info: ExitInfo | None = None
        self._launched: Launched | None = None
        self._channel: Channel | None = None
        self._cell_lock = threading.RLock()
        self._control_lock = threading.Lock()
        self._budget: CellBudget | None = None
        self._running_rid: int | None = None
        self._restart_requested = False
        self._worker_dead = False
        self._runner_lost = False
        self._loss: dict[str, Any] | None = None  # the death the next cell must report
        self._closed = False
        self.worker_pid: int | None = None
        self._secrets = secret_values()
        self._listeners: list[Any] = []

    def add_listener(self, listener: Any) -> None:
        """Call ``listener(event, handle, payload)`` on ``started``, ``result`` and ``shutdown``."""
        self._listeners.append(listener)

    def _emit(self, event: str, payload: Any) -> None:
        for listener in list(self._listeners):
            try:
                listener(event, self, payload)
            except Exception:  # noqa: BLE001 - an observer must never break the kernel
                pass

    # ------------------------------------------------------------------------------ start
    def start(self) -> KernelHandle:
        """Start the runner and wait for its hello.

        :raises KernelStartError: if it does not answer within ``options.start_timeout``.
        """
        with self._cell_lock:
            if self._channel is None:
                self._launch()
        return self

    def _launch(self) -> None:
        from .contract import LaunchSpec

        o = self.options
        env = scrub_env(os.environ, allow=o.env_allow, keep_all=o.inherit_env, extra={
            "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1",
            "HERMES_KERNEL_ID": self.kernel_id, "HERMES_KERNEL_HOST_PID": str(os.getpid()), **o.env})
        config = {"kernel_id": self.kernel_id, "token": self.token, "cwd": o.cwd,
                  "max_output_bytes": max(0, o.max_output_bytes - MARKER_RESERVE_BYTES),
                  "orphan_timeout": o.orphan_timeout, "exit_grace": o.exit_grace,
                  "oom_counter_file": o.oom_counter_file, "cgroup_procs": o.cgroup_procs}
        spec = LaunchSpec(kernel_id=self.kernel_id, config=config, env=env, cwd=o.cwd, python=o.python)
        launched = self.transport.launch(spec)
        channel = Channel(launched.stream, name=f"kernel {self.kernel_id[:8]} ({launched.label})")
        self._launched, self._channel = launched, channel
        try:
            hello = self._hello(channel, attach=self.transport.reattachable, pending=())
        except (TimeoutError, ChannelClosed) as exc:
            log = self.transport.runner_log(launched)
            self.transport.kill(launched)
            self.transport.cleanup(launched)
            self._channel = self._launched = None
            raise KernelStartError(
                f"the {self.transport.name} kernel runner did not say hello within "
                f"{o.start_timeout} s: {exc}" + (f"\nrunner log:\n{log}" if log else ""),
                kernel_id=self.kernel_id) from None
        self.worker_pid = hello.get("worker_pid")
        self._worker_dead = self.worker_pid is None
        self._runner_lost = False
        self._emit("started", launched)

    def _hello(self, channel: Channel, *, attach: bool, pending: tuple[int, ...]) -> dict[str, Any]:
        channel.expect("hello")
        try:
            if attach:
                channel.send({"type": "attach", "token": self.token, "pending": list(pending)})
            header, _ = channel.wait("hello", self.options.start_timeout)
        finally:
            channel.forget("hello")
        return header

    # ------------------------------------------------------------------------------ properties
    @property
    def alive(self) -> bool:
        """The runner is up and its worker has not died (a cheap check; no round trip)."""
        return (not self._closed and self._channel is not None and not self._channel.closed
                and not self._worker_dead)

    @property
    def pid(self) -> int | None:
        """Pid of the interpreter running cells (inside the container for remote kernels)."""
        return self.worker_pid

    @property
    def runner_pid(self) -> int | None:
        return None if self._launched is None else self._launched.pid

    @property
    def launched(self) -> Launched | None:
        return self._launched

    def info(self, **changes: Any) -> KernelInfo:
        base = KernelInfo(kernel_id=self.kernel_id, transport=self.transport.name,
                          generation=self.generation, reused=self.cells_run > 0, pid=self.worker_pid)
        return base.replace(**changes) if changes else base

    # ------------------------------------------------------------------------------ execute
    def execute(self, code: str, *, timeout: float | None = None, raise_on_timeout: bool = False) -> CellResult:
        """Run ``code`` in the kernel's namespace.

        :param timeout: seconds of budget for this cell (``None``: ``options.timeout``).
        :param raise_on_timeout: raise the watchdog outcome's exception instead of returning it.
        :returns: the :class:`CellResult`; a death, exit or lost transport is a result too.
        :raises KernelShutdownError: if the handle was shut down.
        :raises KernelDiedError: if the kernel died earlier and ``auto_restart`` is off.
        :raises CellTimeoutError: (a subclass) only with ``raise_on_timeout``.
        """
        if not isinstance(code, str):
            raise TypeError(f"code must be str, not {type(code).__name__}")
        if timeout is not None and not (isinstance(timeout, (int, float)) and math.isfinite(timeout) and timeout > 0):
            raise ConfigError(f"timeout must be a finite number of seconds > 0, or None; got {timeout!r}")
        if getattr(_in_tool, "kernel", None) is self:
            raise ConfigError(f"a tool cannot run a cell on kernel {self.kernel_id}: the cell that called the "
                              "tool holds it (it would wait for itself)")
        budget_s = self.options.timeout if timeout is None else timeout
        with self._cell_lock:
            if self._closed:
                raise KernelShutdownError(f"kernel {self.kernel_id} is shut down", kernel_id=self.kernel_id)
            loss = self._prepare()
            result = self._run(code, budget_s, loss)
            self.cells_run += 1
        self._emit("result", result)
        if raise_on_timeout and result.watchdog:
            raise _OUTCOME_ERRORS[result.watchdog](result.summary(), result=result)
        return result

    def _prepare(self) -> dict[str, Any] | None:
        """Bring up a runner and a worker for the next cell; return the loss it must report."""
        if self._channel is None or self._runner_lost:
            lost = self._launched is not None
            if lost:
                self._loss = self._loss or {"reason": "died", "note": "the kernel runner was gone"}
                self._discard_runner()
            if not lost or self._may_restart():
                self._launch()
                if lost:
                    self._bump_generation()
        elif self._worker_dead:
            if self._may_restart():
                self._start_worker()
        loss, self._loss = self._loss, None
        return loss

    def _may_restart(self) -> bool:
        if self.options.auto_restart or self._loss is None:
            return True
        loss = self._loss
        raise KernelDiedError(f"kernel {self.kernel_id} is gone ({loss.get('reason')}); "
                              "auto_restart is off: call restart() to continue on a fresh kernel",
                              info=self.info(state_lost=True, **_info_fields(loss)))

    def _start_worker(self) -> None:
        header, _ = self._channel.request({"type": "start_worker"}, self.options.start_timeout)
        if header.get("worker_pid") is None:
            raise KernelStartError(f"kernel {self.kernel_id}: the worker did not start")
        self.worker_pid = header["worker_pid"]
        self._worker_dead = False
        self._bump_generation()

    def _bump_generation(self) -> None:
        self.generation += 1
        self.restart_count += 1

    def _run(self, code: str, budget_s: float | None, loss: dict[str, Any] | None) -> CellResult:
        channel = self._channel
        rid = channel.next_id()
        budget = CellBudget(budget_s, self.options.watchdog)
        authority = CellAuthority(rid, self.tools, self.options.max_tool_calls)
        self._budget, self._running_rid = budget, rid
        channel.expect(rid)
        request = {"type": "execute", "id": rid, "code": code, "tools": self.tools.names()}
        try:
            channel.send(request)
            header, blobs, extra = self._await_result(channel, rid, budget, authority)
            self._join_tools(extra.get("tool_threads", []), budget)
        except ChannelClosed as exc:
            header, blobs, extra = self._on_channel_lost(rid, budget, exc, request)
        finally:
            authority.retire()
            channel.forget(rid)
            self._budget, self._running_rid = None, None
        if header.get("not_run"):  # the worker had died between cells; the runner said so
            self._worker_dead = True
            self._loss = _loss_from(header, "died", "the kernel died between cells")
            if not self._may_restart():  # pragma: no cover - _may_restart raises instead
                raise KernelDiedError("unreachable")
            self._start_worker()
            return self._run(code, budget_s, self._loss_pop())
        return self._build_result(header, blobs, extra, loss, authority)

    def _loss_pop(self) -> dict[str, Any] | None:
        loss, self._loss = self._loss, None
        return loss

    def _await_result(self, channel: Channel, rid: int, budget: CellBudget,
                      authority: CellAuthority) -> tuple[dict[str, Any], list[bytes], dict[str, Any]]:
        extra: dict[str, Any] = {"budget_s": budget.timeout}
        last_heard = time.monotonic()
        pings = 0
        while True:
            try:
                header, blobs = channel.wait(rid, budget.next_wait())
            except TimeoutError:
                action = budget.due()
                if action is not None:
                    outcome = self._escalate(action, rid, extra)
                    if outcome is not None:
                        return outcome
                if self.transport.reattachable:
                    pings, last_heard = self._keepalive(channel, rid, pings, last_heard)
                continue
            last_heard, pings = time.monotonic(), 0
            if header.get("type") == "tool_call":
                extra.setdefault("tool_threads", []).append(self._start_tool_call(channel, header, authority, budget))
                continue
            if header.get("type") == "pong":
                continue
            return header, blobs, extra

    def _keepalive(self, channel: Channel, rid: int, pings: int, last_heard: float) -> tuple[int, float]:
        o = self.options
        silent = time.monotonic() - last_heard
        if silent < o.keepalive_interval * (pings + 1):
            return pings, last_heard
        if pings >= o.keepalive_missed:
            channel.close(f"no reply to {pings} keepalives in {silent:.1f} s")
            raise ChannelClosed(f"peer silent for {silent:.1f} s (keepalive every "
                                f"{o.keepalive_interval} s, {o.keepalive_missed} missed)", closed_by_us=False)
        channel.send({"type": "ping", "id": rid})
        return pings + 1, last_heard

    def _start_tool_call(self, channel: Channel, header: dict[str, Any], authority: CellAuthority,
                         budget: CellBudget) -> threading.Thread:
        """Run a tool in its own thread, so the cell's thread keeps watching the channel and the
        ladder: ``cancel()``, ``interrupt()``, a kill or a shutdown still work while a tool blocks.
        The budget is paused while the tool runs (the seed watchdog's pause flag)."""
        budget.pause()
        thread = threading.Thread(target=self._serve_tool_call, args=(channel, header, authority, budget),
                                  name=f"hermes-tool-{header.get('name')}", daemon=True)
        thread.start()
        return thread

    @staticmethod
    def _join_tools(threads: list[threading.Thread], budget: CellBudget) -> None:
        """A cell's result waits for the tool calls it made (so ``tool_calls`` is complete), until
        they end or the cell is cancelled."""
        for thread in threads:
            while thread.is_alive() and not budget.cancelled:
                thread.join(0.1)

    def _serve_tool_call(self, channel: Channel, header: dict[str, Any], authority: CellAuthority,
                         budget: CellBudget) -> None:
        reply: dict[str, Any] = {"type": "tool_result", "id": header.get("id")}
        _in_tool.kernel = self
        try:
            try:
                reply["value"] = authority.dispatch(header.get("cell"), str(header.get("name")),
                                                    dict(header.get("args") or {}))
                reply["ok"] = True
            except ToolCallRefused as exc:
                reply.update(ok=False, error=str(exc))
            except Exception as exc:  # noqa: BLE001 - a failing tool is the cell's error, not ours
                reply.update(ok=False, error=f"{type(exc).__name__}: {exc}")
        finally:
            _in_tool.kernel = None
            budget.resume()
        try:
            channel.send(reply)
        except TypeError as exc:
            channel.send({"type": "tool_result", "id": header.get("id"), "ok": False,
                          "error": f"tool {header.get('name')!r} returned a value that is not JSON: {exc}"})
        except ChannelClosed:
            pass  # the cell ended meanwhile (killed, shut down): nobody waits for this answer

    # ------------------------------------------------------------------------------ watchdog
    def _escalate(self, action: str, rid: int, extra: dict[str, Any]):
        """Carry out one rung of the ladder; return a final outcome when the ladder ends here."""
        channel = self._channel
        extra["watchdog_stage"] = action
        if action == "interrupt":
            channel.send({"type": "interrupt", "id": rid})
            return None
        if action == "kill":
            channel.send({"type": "kill_worker", "id": channel.next_id()})
            return None
        extra["abandon"] = True  # no result even after the kill: the runner is unreachable
        confirmed = self._force_kill()
        return {"type": "result", "id": rid, "status": "died", "signal": 9 if confirmed else None,
                "unreachable": True, "confirmed": confirmed}, [], extra

    def _force_kill(self) -> bool:
        launched = self._launched
        confirmed = bool(launched) and self.transport.kill(launched)
        self._runner_lost = True
        self._worker_dead = True
        return confirmed

    def _on_channel_lost(self, rid: int, budget: CellBudget, exc: ChannelClosed,
                         request: dict[str, Any] | None = None):
        """The stream broke mid-cell: re-attach where the transport can, else report the loss.

        After a re-attach, ``request`` is sent again when the runner neither ran it nor is
        running it (the stream broke before the request arrived, e.g. it was dropped while idle).
        """
        extra: dict[str, Any] = {}
        hello = self._reattach(pending=(rid,)) if self.transport.reattachable and not self._closed else None
        if hello is not None:
            extra["reconnected"] = True
            try:
                if request is not None and rid not in hello.get("replayed", ()) and hello.get("running") != rid:
                    self._channel.send(request)
                header, blobs, more = self._await_result(self._channel, rid, budget,
                                                         CellAuthority(rid, self.tools, self.options.max_tool_calls))
                extra.update(more)
                return header, blobs, extra
            except ChannelClosed as again:
                exc = again
        self._runner_lost = True
        self._worker_dead = True
        reason = "transport_lost" if self.transport.reattachable else "died"
        if self._closed:
            reason = "reset"
        alive = self._launched is not None and self.transport.alive(self._launched)
        if self._launched is not None and not self.transport.reattachable:
            self.transport.kill(self._launched)
        return {"type": "result", "id": rid, "status": "died", "lost_reason": reason,
                "note": f"channel lost: {exc}" + (" (runner still alive; killed)" if alive else "")}, [], extra

    def _reattach(self, pending: tuple[int, ...]) -> dict[str, Any] | None:
        """Open a new stream to the runner and attach; the runner's hello, or ``None`` if lost."""
        deadline = time.monotonic() + self.options.reconnect_timeout
        while time.monotonic() < deadline and not self._closed:
            channel = None
            try:
                stream = self.transport.reattach(self._launched)
                channel = Channel(stream, name=self._channel.name if self._channel else "channel")
                for rid in pending:
                    channel.expect(rid)
                hello = self._hello(channel, attach=True, pending=pending)
            except (TransportLostError, TimeoutError, ChannelClosed, OSError) as exc:
                if channel is not None:
                    channel.close("re-attach failed")
                if getattr(exc, "permanent", False):  # e.g. the container stopped: retrying cannot help
                    return None
                time.sleep(0.2)
                continue
            if self._channel is not None:  # the broken one: release its stream (fds, exec, ssh channel)
                self._channel.close("replaced by a re-attached channel")
            self._channel = channel
            self.worker_pid = hello.get("worker_pid") or self.worker_pid
            return hello
        return None

    # ------------------------------------------------------------------------------ results
    def _build_result(self, header: dict[str, Any], blobs: list[bytes], extra: dict[str, Any],
                      loss: dict[str, Any] | None, authority: CellAuthority) -> CellResult:
        while len(blobs) < 4:
            blobs.append(b"")
        out = decode_capture(blobs[0], blobs[1], int(header.get("stdout_dropped", 0)), secrets=self._secrets)
        err = decode_capture(blobs[2], blobs[3], int(header.get("stderr_dropped", 0)), secrets=self._secrets)
        status = header.get("status", "error")
        info_changes: dict[str, Any] = {"reconnected": bool(extra.get("reconnected"))}
        if loss:
            info_changes.update(state_lost=True, **_info_fields(loss))
        watchdog = None
        stage = extra.get("watchdog_stage")
        if header.get("worker_pid"):
            self.worker_pid = header["worker_pid"]
        if status in ("died", "exited"):
            status, watchdog, info_changes = self._after_death(header, status, stage, extra, info_changes)
        elif stage == "interrupt" and status in ("interrupted", "error"):
            status, watchdog = "timeout", "interrupted"
            info_changes["note"] = (f"over its {extra.get('budget_s')} s budget: interrupted (SIGINT); "
                                    "the namespace is kept")
        elif self._restart_requested and status == "interrupted":
            info_changes.update(state_lost=True, reason="reset")
        return CellResult(
            status=status, kernel=self.info(**info_changes), stdout=out.text, stderr=err.text,
            stdout_truncated=out.truncated, stderr_truncated=err.truncated,
            stdout_dropped_bytes=out.dropped_bytes, stderr_dropped_bytes=err.dropped_bytes,
            ename=header.get("ename"), evalue=_clean_opt(header.get("evalue"), self._secrets),
            traceback=_clean_opt(header.get("traceback"), self._secrets),
            execution_count=int(header.get("execution_count") or 0),
            duration_s=float(header.get("duration_s") or 0.0), tool_calls=tuple(authority.calls),
            value=_clean_opt(header.get("value"), self._secrets), watchdog=watchdog)

    def _after_death(self, header: dict[str, Any], status: str, stage: str | None, extra: dict[str, Any],
                     info_changes: dict[str, Any]):
        """Classify a cell that ended its kernel, restart where the ladder says so."""
        code, sig = header.get("exit_code"), header.get("signal")
        oom = bool(header.get("oom_killed"))
        self._worker_dead = True
        if status == "exited":
            reason: Reason = "exited"
            note = f"SystemExit({header.get('evalue') or ''}) ended the kernel with exit code {code}"
        elif self._restart_requested:
            reason, note = "reset", "the kernel was restarted while the cell ran"
        elif self._closed:
            reason, note = "reset", "the kernel was shut down while the cell ran"
        elif oom:
            reason, note = "oom_killed", "killed by the kernel OOM killer (memory cgroup oom_kill counter rose)"
        elif header.get("lost_reason"):
            reason, note = header["lost_reason"], header.get("note", "")
        elif sig is not None:
            reason, note = "died", f"killed by signal {sig}" + (
                " (SIGKILL; possible OOM: the kernel has no memory cgroup of its own to tell)"
                if sig == 9 and header.get("oom_counter") is None and stage is None else "")
        else:
            reason, note = "died", f"the kernel exited with code {code}"
        if header.get("note"):
            note = f"{note}; {header['note']}" if header["note"] not in note else note
        watchdog = None
        if stage in ("kill", "abandon"):
            status, reason = "timeout", "timeout"
            watchdog, note = self._reset_after_timeout(extra)
        elif reason == "reset":
            self._worker_dead = True
        # the next cell reports the loss too (it runs on the replacement the ladder started)
        self._loss = {"reason": reason, "exit_code": code, "signal": sig, "oom_killed": oom, "note": note}
        info_changes.update(state_lost=True, reason=reason, exit_code=code, signal=sig, oom_killed=oom, note=note)
        return status, watchdog, info_changes

    def _reset_after_timeout(self, extra: dict[str, Any]) -> tuple[str, str]:
        ineffective = "the interrupt was ineffective"
        if extra.get("abandon") and not self._launched_confirmed_dead():
            return "abandoned", (f"{ineffective} and the kernel could not be reached; not reset: "
                                 "the work may still be running")
        try:
            self._prepare_replacement()
        except (KernelStartError, ChannelClosed, TimeoutError) as exc:
            return "reset_failed", f"{ineffective}; the kernel was killed but its replacement failed to start: {exc}"
        return "reset", f"{ineffective}; the kernel was killed (SIGKILL) and restarted: state lost"

    def _launched_confirmed_dead(self) -> bool:
        return self._launched is None or not self.transport.alive(self._launched)

    def _prepare_replacement(self) -> None:
        if not self.options.watchdog.restart:
            raise KernelStartError("restart after timeout is off (WatchdogPolicy.restart=False)")
        if self._runner_lost:
            self._discard_runner()
            self._launch()
            self._bump_generation()
        else:
            self._start_worker()

    # ------------------------------------------------------------------------------ control
    def interrupt(self) -> None:
        """Send SIGINT to the running cell (and its child processes); the namespace is kept."""
        channel, rid = self._channel, self._running_rid
        if channel is not None and rid is not None:
            channel.send({"type": "interrupt", "id": rid})

    def cancel(self) -> None:
        """Start the timeout ladder for the running cell now, even while its budget is paused."""
        budget = self._budget
        if budget is not None:
            budget.cancel()

    @contextmanager
    def budget_paused(self) -> Iterator[None]:
        """Freeze the running cell's budget (e.g. while a human answers a prompt)."""
        budget = self._budget
        if budget is None:
            yield
            return
        with budget.paused():
            yield

    def restart(self) -> KernelInfo:
        """Kill the worker (and every process it started) and start a fresh one; state is lost.

        A cell running meanwhile returns ``status="died"`` with ``reason="reset"``. The old
        worker is confirmed dead before the new one starts.
        """
        with self._control_lock:
            if self._closed:
                raise KernelShutdownError(f"kernel {self.kernel_id} is shut down")
            self._restart_requested = True
            try:
                if self._running_rid is not None:
                    self._channel.request({"type": "kill_worker"}, 10.0)
                    with self._cell_lock:  # the running cell settles first
                        return self._restart_idle()
                with self._cell_lock:
                    return self._restart_idle()
            finally:
                self._restart_requested = False

    def _restart_idle(self) -> KernelInfo:
        if self._channel is None or self._runner_lost:
            self._discard_runner()
            self._launch()
            self._bump_generation()
        else:
            if not self._worker_dead:
                self._channel.request({"type": "kill_worker"}, 10.0)
            self._worker_dead = True
            self._start_worker()
        self._loss = {"reason": "reset", "note": "restart() was called"}
        return self.info(state_lost=True, reason="reset")

    def shutdown(self, now: bool = False) -> ExitInfo:
        """End the kernel: request -> SIGTERM -> SIGKILL, each step waiting ``shutdown_grace``.

        :param now: skip the polite steps and SIGKILL the whole tree at once.
        :returns: the step that ended it, with the worker's exit code or signal. Idempotent.
        """
        with self._control_lock:
            if self._closed:
                return self.exit_info or ExitInfo(step="already-exited")
            self._closed = True
            self.exit_info = self._stop(now)
        self._emit("shutdown", self.exit_info)
        return self.exit_info

    def _stop(self, now: bool) -> ExitInfo:
        channel, launched = self._channel, self._launched
        if launched is None:
            return ExitInfo(step="already-exited")
        info = None
        if not now and channel is not None and not channel.closed:
            try:
                header, _ = channel.request({"type": "shutdown", "grace": self.options.shutdown_grace},
                                            self.options.shutdown_grace * 2 + 6.0)
                info = ExitInfo(step=header.get("step", "request"), exit_code=header.get("exit_code"),
                                signal=header.get("signal"),
                                note="forced kill after grace" if header.get("step") == "sigkill" else "")
            except (TimeoutError, ChannelClosed, TransportLostError):
                info = None
        reaped = self._finish_runner(info is None)
        if info is None:
            info = ExitInfo(step="sigkill" if now else "unreachable", signal=9, confirmed=reaped,
                            note="killed from outside through the transport")
        return info

    def _finish_runner(self, kill: bool) -> bool:
        launched = self._launched
        confirmed = True
        if launched is not None:
            if kill or not self.transport.reap(launched, self.options.shutdown_grace + 3.0):
                confirmed = self.transport.kill(launched)
        self._discard_runner()
        return confirmed

    def _discard_runner(self) -> None:
        channel, launched = self._channel, self._launched
        self._channel = self._launched = None
        if channel is not None:
            channel.close()
        if launched is not None:
            if self.transport.alive(launched):  # local: alive() also collects an exited runner
                self.transport.kill(launched)
            self.transport.cleanup(launched)

    def close(self) -> ExitInfo:
        """Alias of :meth:`shutdown` (the name the handed cases use)."""
        return self.shutdown()

    def __enter__(self) -> KernelHandle:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return (f"<KernelHandle {self.kernel_id[:8]} {self.transport.name} gen={self.generation} "
                f"pid={self.worker_pid} {'alive' if self.alive else 'down'}>")


def _info_fields(loss: Mapping[str, Any]) -> dict[str, Any]:
    fields = ("reason", "exit_code", "signal", "oom_killed", "note")
    return {k: loss[k] for k in fields if loss.get(k) is not None}


def _loss_from(header: Mapping[str, Any], reason: str, note: str) -> dict[str, Any]:
    sig = header.get("signal")
    oom = bool(header.get("oom_killed"))
    return {"reason": "oom_killed" if oom else reason, "exit_code": header.get("exit_code"),
            "signal": sig, "oom_killed": oom,
            "note": note + (f" (signal {sig})" if sig else f" (exit code {header.get('exit_code')})")}


def _clean_opt(text: str | None, secrets_: tuple[str, ...]) -> str | None:
    if text is None:
        return None
    from .output import clean

    return clean(text, secrets_)
