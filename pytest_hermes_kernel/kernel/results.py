"""Wire format and the result schema shared by every transport.

Frames are length-prefixed (``u32 total | u32 header | JSON header | blobs``); the codec lives
in the kernel runner (``runner/frames.py``, stdlib only) and is re-exported here: one codec. The dataclasses are the one result
shape of DESIGN.md section 7, identical for local, docker, ssh and execute-only backends.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from .runner.frames import MAX_FRAME_BYTES, PROTOCOL_VERSION, FrameDecoder, FrameError, FrameTooDeep, encode_frame

if TYPE_CHECKING:
    from .keys import KernelKey

__all__ = [
    "MAX_FRAME_BYTES", "PROTOCOL_VERSION", "FrameDecoder", "FrameError", "FrameTooDeep", "encode_frame",
    "Status", "Reason", "WatchdogOutcome", "KernelInfo", "CellResult", "ExitInfo", "KernelSnapshot",
]

Status = Literal["ok", "error", "interrupted", "timeout", "died", "exited"]
"""How a cell ended. ``exited``: the cell raised SystemExit and the kernel ended with it."""

Reason = Literal["reset", "died", "exited", "oom_killed", "evicted", "idle_reaped", "timeout",
                 "transport_lost", "host_gone"]
"""Why state was lost (DESIGN.md section 6; ``exited`` from handed case B07)."""

WatchdogOutcome = Literal["interrupted", "reset", "reset_failed", "abandoned"]
"""What the timeout ladder did: SIGINT worked; killed and restarted; restart failed; unreachable."""


@dataclass(frozen=True)
class KernelInfo:
    """Facts about the kernel a cell ran on, attached to every :class:`CellResult`.

    ``state_lost`` is true when the namespace this cell saw is not the one earlier cells built
    (or, on a cell that killed its kernel, will not be there for the next one); ``reason`` says why.
    ``exit_code``/``signal`` describe the death that caused it, where known.
    """

    kernel_id: str
    transport: str
    generation: int = 0
    reused: bool = False
    state_lost: bool = False
    reason: Reason | None = None
    exit_code: int | None = None
    signal: int | None = None
    oom_killed: bool = False
    reconnected: bool = False
    note: str = ""
    pid: int | None = None

    def replace(self, **changes: Any) -> KernelInfo:
        """A copy with ``changes`` applied. :raises TypeError: if a change names no field."""
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class CellResult:
    """The outcome of one cell.

    Output fields are text, ANSI-stripped and redacted. When a stream went over its cap the
    text keeps the head and the tail around a ``[... N bytes dropped ...]`` marker,
    ``*_truncated`` is true and ``*_dropped_bytes`` counts what was left out.
    ``value`` is the ``repr`` of the cell's trailing expression, as a REPL shows it, or ``None``;
    it is bounded like a stream: over the output cap it keeps the head and the tail around a
    ``[... N characters dropped ...]`` marker, ``value_truncated`` is true, and
    ``value_length`` is the full ``repr``'s length in characters (``None`` without a value).
    """

    status: Status
    kernel: KernelInfo
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_dropped_bytes: int = 0
    stderr_dropped_bytes: int = 0
    ename: str | None = None
    evalue: str | None = None
    traceback: str | None = None
    execution_count: int = 0
    duration_s: float = 0.0
    tool_calls: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    value: str | None = None
    watchdog: WatchdogOutcome | None = None
    value_truncated: bool = False
    value_length: int | None = None

    @property
    def ok(self) -> bool:
        """``status == "ok"``."""
        return self.status == "ok"

    def replace(self, **changes: Any) -> CellResult:
        """A copy with ``changes`` applied. :raises TypeError: if a change names no field."""
        return dataclasses.replace(self, **changes)

    def summary(self) -> str:
        """One line for logs and assertion messages (a line break in the error or note shows as ``\\n``)."""
        bits = [f"status={self.status}"]
        if self.watchdog:
            bits.append(f"watchdog={self.watchdog}")
        if self.kernel.reconnected:  # the stream dropped and was re-attached: a story without it hid a drop
            bits.append("reconnected")
        if self.ename:  # an error without a message by its name alone (it was "KeyboardInterrupt: ; ...")
            bits.append(f"{self.ename}: {self.evalue}" if self.evalue else self.ename)
        k = self.kernel
        if k.state_lost:
            bits.append(f"state_lost reason={k.reason}")
        if k.exit_code is not None:
            bits.append(f"exit_code={k.exit_code}")
        if k.signal is not None:
            bits.append(f"signal={k.signal}")
        if k.note:
            bits.append(k.note)
        return "\\n".join("; ".join(bits).splitlines())  # (a multi-line evalue or note broke the line in two)


@dataclass(frozen=True)
class ExitInfo:
    """How a kernel ended: ``step`` is the shutdown step that ended it.

    ``step`` is one of ``request`` (it exited when asked), ``sigterm``, ``sigkill``,
    ``already-exited``, ``unreachable`` (the runner could not be reached; the transport's
    kill was used), ``forked-child`` (called in a forked child of the kernel's process:
    nothing was done) or ``kept`` (:meth:`~.handle.KernelHandle.keep`: it runs on, detached). ``confirmed`` says whether the transport saw the runner gone
    (:meth:`~.contract.Transport.seen_gone`); ``False``: it may still run (its host could not
    be reached, or its container is paused), and its orphan timer ends it.

    ``leftovers`` names what the kernel's cells left running when it ended (``pid N: command``
    each, where the kernel ran): a process started in a session of its own, which the kill of the
    worker's session does not reach. A runner the kit spawned adopts such a process as a subreaper
    and names it in its reply to the shutdown request; the leak check reports it after the test
    (a kernel server's kernels leave theirs to the server, where the leak probes find them).
    """

    step: str
    exit_code: int | None = None
    signal: int | None = None
    confirmed: bool = True
    note: str = ""
    leftovers: tuple[str, ...] = ()

    @property
    def may_still_run(self) -> bool:
        """A shutdown that was not confirmed: the runner may still run (not a kernel kept on
        purpose, nor one left alone in a forked child)."""
        return not self.confirmed and self.step not in ("forked-child", "kept")


@dataclass(frozen=True)
class KernelSnapshot:
    """One registry entry, as :meth:`~.registry.KernelRegistry.snapshot` reports it."""

    key: KernelKey
    kernel_id: str
    pid: int | None
    runner_pid: int | None
    generation: int
    leases: int
    pinned: bool
    last_used: float
    state: str


def count_death(deaths: dict[str, int], result: CellResult, *, between: bool = False) -> None:
    """Count a cell that ended its kernel (or was reset for its budget) under its reason; not one whose
    interrupt kept the namespace (its reason is then a loss before it: an eviction counted as a death).
    ``between``: no loss was known before the cell, so one it reports is a death between cells (a
    cell's thread, its ``signal.alarm``, a kill from outside), found as the cell began: counted too."""
    if result.status == "timeout" and result.watchdog == "interrupted":
        return
    ended = result.status in ("died", "exited", "timeout")
    if result.kernel.reason and (ended or (between and result.kernel.state_lost)):
        deaths[result.kernel.reason] = deaths.get(result.kernel.reason, 0) + 1
