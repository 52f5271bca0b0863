"""What one cell ended with (:class:`CellOutcome`) and what that means for its result.

A :class:`CellOutcome` keeps two kinds of facts apart: what the kernel runner sent
(:class:`RunnerReply`, the fields of its ``result`` frame that the host reads, and the captured
output blobs) and what the host saw itself (the watchdog's last rung, a re-attach, a runner
that could not be reached, a channel lost for good). When no ``result`` frame came, ``reply``
is ``None``: the host never invents one.

:func:`judge` says what an outcome means (:class:`Verdict`: the status, a death, the watchdog's
doing), :func:`classify_death` why a cell's kernel ended; :func:`build_result` turns an outcome
into the :class:`~.results.CellResult` the API returns (decoded, ANSI-stripped, redacted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, fields, replace
from operator import itemgetter
from typing import Any, Literal

from .lifecycle import Loss
from .output import clean, clean_cut, clean_inline_cut, decode_capture
from .results import CellResult, KernelInfo, Reason, Status, WatchdogOutcome
from .watchdog import Action

__all__ = ["RunnerReply", "CellOutcome", "ControlIntent", "Verdict", "judge", "classify_death", "build_result",
           "not_run", "died_unrun", "EMPTY_BLOBS"]

EMPTY_BLOBS: tuple[bytes, bytes, bytes, bytes] = (b"", b"", b"", b"")
"""No output: stdout head, stdout tail, stderr head, stderr tail."""

SIGSEGV = 11
"""Linux's SIGSEGV (as the runner reports it: a number, whatever host reads it)."""
SEGV_NOTE = ("killed by signal 11 (SIGSEGV: a stack overflow? deep recursion under a raised recursion limit "
             "is the usual cause; the faulthandler traceback is at the end of stderr)")
"""The note of a worker that segfaulted."""

ControlIntent = Literal["none", "restart", "shutdown", "keep"]
"""What a control thread asked for while the cell ran: nothing, ``restart()``, ``shutdown()``, ``keep()``."""


@dataclass(frozen=True)
class RunnerReply:
    """The kernel runner's ``result`` frame for one cell: the header fields the host reads.

    :param status: how the runner says the cell ended (``died``/``exited``: the worker is gone).
    :param not_run: the worker had died between cells; the cell was not run.
    :param exit_code: the worker's exit code, where it ended.
    :param signal: the signal that ended the worker.
    :param oom_killed: the memory cgroup's OOM counter rose with the death.
    :param oom_counter: that counter after the death; ``None``: no cgroup counter to read.
    :param note: the runner's own remark (e.g. a forced kill after ``exit_grace``).
    :param value: the ``repr`` of the cell's trailing value, or its head when truncated.
    :param value_tail: the end of that ``repr`` when it went over the cap (else empty).
    :param value_truncated: the ``repr`` went over the cap; ``value_length`` is its full length
        in characters.
    :param execution_count: the worker's cell counter.
    :param duration_s: seconds the cell ran in the worker.
    :param stdout_dropped: bytes of stdout the bounded capture left out (``stderr_dropped`` alike).
    :param stdout_stray: bytes written to stdout while no cell ran, since the cell before, and
        dropped (a thread or process an earlier cell left running; ``stderr_stray`` alike).
    :param oom_kills: processes the memory cgroup's OOM killer ended while the cell ran, its
        worker living on (a subprocess of the cell); a death's OOM kill is ``oom_killed``.
    :param oom_shared: with ``oom_kills``: the counter file of a cgroup the kernel shares (a
        container's, the machine's: other kernels' kills count there too); ``""``: its own.
    :param worker_pid: the worker's pid after the cell (a new one after a death).
    :param caught_interrupt: an ``ok`` cell caught a ``KeyboardInterrupt`` the runner raised in it.
    """

    status: Status
    not_run: bool = False
    exit_code: int | None = None
    signal: int | None = None
    oom_killed: bool = False
    oom_counter: int | None = None
    note: str = ""
    ename: str | None = None
    evalue: str | None = None
    traceback: str | None = None
    value: str | None = None
    value_tail: str = ""
    value_truncated: bool = False
    value_length: int | None = None
    execution_count: int = 0
    duration_s: float = 0.0
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    stdout_stray: int = 0
    stderr_stray: int = 0
    oom_kills: int = 0
    oom_shared: str = ""
    worker_pid: int | None = None
    caught_interrupt: bool = False

    @classmethod
    def from_header(cls, header: Mapping[str, Any]) -> RunnerReply:
        """Read a ``result`` header: its fields of this class, the defaults for those it lacks
        (a missing status reads as ``error``); other header fields are ignored.

        This runs once per cell, so it is done in a few C calls (pick the fields, fill the
        frozen instance in one step) instead of ``__init__``'s one ``object.__setattr__`` per
        field; the result equals ``RunnerReply(**fields)``. Types are the runner's JSON types.
        """
        reply = object.__new__(cls)
        reply.__dict__.update(zip(_REPLY_FIELDS, _pick_reply_fields({**_REPLY_DEFAULTS, **header})))
        return reply


_REPLY_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(RunnerReply))
_REPLY_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(RunnerReply) if f.default is not MISSING}
_REPLY_DEFAULTS["status"] = "error"
_pick_reply_fields = itemgetter(*_REPLY_FIELDS)


@dataclass(frozen=True)
class CellOutcome:
    """How one cell's wait ended: the runner's reply (if any) plus what the host saw.

    :param reply: the runner's result; ``None`` when none came (``abandoned`` or ``channel_lost``).
    :param blobs: captured output: stdout head, stdout tail, stderr head, stderr tail.
    :param budget_s: the cell's budget in seconds; ``None`` is no limit.
    :param stage: the last rung of the watchdog's ladder taken for this cell, if any.
    :param reconnected: the stream broke during the cell and was re-attached.
    :param abandoned: the ladder ran out: no result even after the kill, so the runner was killed
        from outside through the transport.
    :param kill_confirmed: with ``abandoned``: the transport saw the runner gone.
    :param silent_s: with ``abandoned``: seconds the runner had sent nothing, keepalives unanswered,
        when it was killed (its stream stalled: a frozen kernel server); ``None``: it answered.
    :param cancelled: the caller cancelled the cell (``cancel()``, its cancel switch, the awaiting
        task): the ladder started then, not at the end of its budget.
    :param channel_lost: the stream broke and could not be re-attached: the loss it means
        (``transport_lost``, ``died``, or ``reset`` during a shutdown) and a note.
    :param interrupt_sent: the host sent the cell an interrupt (``interrupt()``, the ladder's SIGINT).
    """

    reply: RunnerReply | None
    blobs: tuple[bytes, bytes, bytes, bytes] = EMPTY_BLOBS
    budget_s: float | None = None
    stage: Action | None = None
    reconnected: bool = False
    abandoned: bool = False
    kill_confirmed: bool = False
    silent_s: float | None = None
    channel_lost: Loss | None = None
    cancelled: bool = False
    interrupt_sent: bool = False

    @property
    def status(self) -> Status:
        """The runner's status; ``died`` when the host saw the kernel end without a reply."""
        return "died" if self.reply is None else self.reply.status

    @property
    def ended_kernel(self) -> bool:
        """The worker is gone after this cell (it died, exited, or its runner is gone)."""
        return self.status in ("died", "exited")

    @property
    def runner_gone(self) -> bool:
        """The runner itself is gone or unreachable: the next cell needs a new one."""
        return self.abandoned or self.channel_lost is not None

    @property
    def ladder_killed(self) -> bool:
        """The watchdog's ladder got past SIGINT: the kernel was killed for its budget."""
        return self.stage in ("kill", "abandon")


@dataclass(frozen=True)
class Verdict:
    """What a :class:`CellOutcome` means, before the handle acts on it.

    :param status: the cell's status as the API reports it.
    :param death: the loss, when the cell ended its kernel (its reason is ``timeout`` when the
        watchdog's ladder killed it; the handle then resets the kernel and sets the note).
    :param watchdog: ``interrupted`` when the ladder's SIGINT ended the cell (state kept).
    :param note: the note for this cell's kernel info, when the verdict has one of its own.
    :param reset: a ``restart()`` cut the cell short: its state is lost (reason ``reset``).
    """

    status: Status
    death: Loss | None = None
    watchdog: WatchdogOutcome | None = None
    note: str | None = None
    reset: bool = False

    def info_changes(self, *, earlier: Loss | None, death: Loss | None, reconnected: bool,
                     start_note: str | None = None) -> dict[str, Any]:
        """The :class:`~.results.KernelInfo` fields of the cell's result.

        :param earlier: the loss this cell reports from before it (a death, a reset, an eviction).
        :param death: the loss this cell caused, as the handle settled it (after any reset).
        :param reconnected: the stream was re-attached during the cell.
        :param start_note: how the kernel started, said once (e.g. no kernel server: a plain spawn).
        """
        changes: dict[str, Any] = {"reconnected": reconnected, **(earlier.info_fields() if earlier else {})}
        if death is not None:
            changes.update(death.info_fields())
        if self.note:
            changes["note"] = self.note
        if self.reset:
            changes.update(state_lost=True, reason="reset")
        if start_note:
            changes["note"] = "; ".join(filter(None, (changes.get("note"), start_note)))
        return changes


def judge(outcome: CellOutcome, intent: ControlIntent) -> Verdict:
    """The :class:`Verdict` on ``outcome``.

    :param intent: what a control thread asked for while the cell ran.
    """
    reply = outcome.reply  # (fields read directly: this runs once per cell)
    status: Status = "died" if reply is None else reply.status
    if status == "died" or status == "exited":
        death = classify_death(outcome, intent)
        if outcome.stage == "kill" or outcome.stage == "abandon":
            return Verdict(status="timeout", death=replace(death, reason="timeout"))
        return Verdict(status=status, death=death)
    caught = status == "ok" and reply is not None and reply.caught_interrupt  # (it went on to its end: no pass)
    if outcome.stage in ("interrupt", "kill") and (status in ("interrupted", "error") or caught):
        # (stage "kill": the interrupt's result crossed the kill on the stream; the runner then
        # skips a kill for a cell that has ended, so the namespace is kept)
        why = "cancelled" if outcome.cancelled else f"over its {outcome.budget_s} s budget"
        how = "; the cell caught the KeyboardInterrupt and ended by itself" if caught else ""
        return Verdict(status="timeout", watchdog="interrupted",
                       note=f"{why}: interrupted (SIGINT){how}; the namespace is kept")
    if intent == "restart" and status == "interrupted":
        return Verdict(status=status, reset=True)
    if status == "interrupted" and not outcome.interrupt_sent:  # the cell's own KeyboardInterrupt: its error
        return _RAISED
    return _PLAIN.get(status) or Verdict(status=status)


_PLAIN: dict[str, Verdict] = {s: Verdict(status=s) for s in ("ok", "error", "interrupted")}
"""The verdicts of cells that ended as the runner says, with nothing else to tell (most cells)."""
_RAISED = Verdict(status="error", note="the cell raised KeyboardInterrupt itself: no interrupt was sent to it")


def classify_death(outcome: CellOutcome, intent: ControlIntent) -> Loss:
    """Why the cell's kernel ended, as the loss it means (before any watchdog reset).

    :param outcome: an outcome whose :attr:`CellOutcome.ended_kernel` is true.
    :param intent: what a control thread asked for meanwhile (a restart or shutdown is a reset).
    :returns: the loss with its reason, exit code, signal, OOM flag and note.
    """
    reply = outcome.reply
    code = reply.exit_code if reply else None
    sig = reply.signal if reply else (9 if outcome.abandoned and outcome.kill_confirmed else None)
    oom = bool(reply and reply.oom_killed)
    reason, note = _death_reason(outcome, intent, code, sig, oom)
    extra = reply.note if reply else (outcome.channel_lost.note if outcome.channel_lost else "")
    if extra and extra not in note:
        note = f"{note}; {extra}"
    return Loss(reason=reason, exit_code=code, signal=sig, oom_killed=oom, note=note)


def _death_reason(outcome: CellOutcome, intent: ControlIntent, code: int | None, sig: int | None,
                  oom: bool) -> tuple[Reason, str]:
    reply = outcome.reply
    if outcome.status == "exited":
        return "exited", f"SystemExit({(reply.evalue if reply else '') or ''}) ended the kernel with exit code {code}"
    if intent == "restart":
        return "reset", "the kernel was restarted while the cell ran"
    if intent == "shutdown":
        return "reset", "the kernel was shut down while the cell ran"
    if intent == "keep":
        return "reset", "the kernel was kept for post-mortem while the cell ran: the cell runs on in it, without this handle"
    if oom:
        return "oom_killed", "killed by the kernel OOM killer (memory cgroup oom_kill counter rose)"
    if outcome.channel_lost is not None:
        return outcome.channel_lost.reason, outcome.channel_lost.note
    if sig == SIGSEGV:
        return "died", SEGV_NOTE
    if sig is not None:
        maybe_oom = sig == 9 and reply is not None and reply.oom_counter is None and outcome.stage is None
        return "died", f"killed by signal {sig}" + (
            " (SIGKILL; possible OOM: the kernel has no memory cgroup of its own to tell)" if maybe_oom else "")
    return "died", f"the kernel exited with code {code}"


def build_result(outcome: CellOutcome, *, status: Status, kernel: KernelInfo, watchdog: WatchdogOutcome | None,
                 tool_calls: Iterable[dict[str, Any]], secrets: tuple[str, ...]) -> CellResult:
    """The :class:`CellResult` of ``outcome``: output decoded and bounded, text cleaned and redacted.

    :param status: the final status (the watchdog may have turned the runner's into ``timeout``).
    :param kernel: the facts about the kernel, losses included.
    :param secrets: values to redact from every text field.
    """
    reply = outcome.reply or RunnerReply(status=status)
    blobs = outcome.blobs
    value, value_length = _value_text(reply, secrets)
    out = decode_capture(blobs[0], blobs[1], reply.stdout_dropped, secrets=secrets)
    err = decode_capture(blobs[2], blobs[3], reply.stderr_dropped, secrets=secrets)
    for extra in (_oom_note(reply), _stray_note(reply)):  # each came back without a word
        if extra:
            kernel = kernel.replace(note=f"{kernel.note}; {extra}" if kernel.note else extra)
    return CellResult(
        status=status, kernel=kernel, stdout=out.text, stderr=err.text,
        stdout_truncated=out.truncated, stderr_truncated=err.truncated,
        stdout_dropped_bytes=out.dropped_bytes, stderr_dropped_bytes=err.dropped_bytes,
        ename=reply.ename, evalue=_clean_opt(reply.evalue, secrets), traceback=_clean_opt(reply.traceback, secrets),
        execution_count=reply.execution_count, duration_s=reply.duration_s, tool_calls=tuple(tool_calls),
        value=value, value_truncated=reply.value_truncated, value_length=value_length, watchdog=watchdog)


def _oom_note(reply: RunnerReply) -> str:
    """The note for processes the OOM killer ended while the cell ran and its worker lived ("" for none)."""
    n = reply.oom_kills
    if not isinstance(n, int) or n <= 0 or reply.status == "died":
        return ""
    if reply.oom_shared:  # a container's or the machine's cgroup: another kernel's OOM kill counts there too
        return (f"the memory cgroup's OOM killer ended {n} process{'es' if n > 1 else ''} while this cell ran "
                f"(not the worker; the cgroup is one this kernel shares, {reply.oom_shared}: a subprocess of the "
                "cell, or another process there, another kernel's too)")
    return (f"the memory cgroup's OOM killer ended {n} process{'es' if n > 1 else ''} while this cell ran "
            "(not the worker: a subprocess of the cell, whose exit by signal 9 was an OOM kill)")


def _stray_note(reply: RunnerReply) -> str:
    """The note for output written while no cell ran, before this cell, and dropped ("" for none)."""
    bits = [f"{n} bytes of {name}" for name, n in (("stdout", reply.stdout_stray), ("stderr", reply.stderr_stray))
            if isinstance(n, int) and n > 0]
    if not bits:
        return ""
    return (f"{' and '.join(bits)} written while no cell ran (by a thread or process an earlier cell left "
            "running) were dropped: output belongs to the cell running when it is written")


def blobs_of(blobs: list[bytes]) -> tuple[bytes, bytes, bytes, bytes]:
    """The four output blobs of a result frame (missing ones are empty)."""
    if len(blobs) == 4:
        return blobs[0], blobs[1], blobs[2], blobs[3]
    padded = [*blobs[:4], *EMPTY_BLOBS][:4]
    return padded[0], padded[1], padded[2], padded[3]


def _value_text(reply: RunnerReply, secrets: tuple[str, ...]) -> tuple[str | None, int | None]:
    """The value's text (head, marker, tail when truncated) and the full ``repr``'s length."""
    if reply.value is None:
        return None, None
    if not reply.value_truncated:
        return clean(reply.value, secrets), len(reply.value)
    length = reply.value_length or 0
    dropped = length - len(reply.value) - len(reply.value_tail)
    marker = f"\n[... {dropped} characters dropped ...]\n"
    head, tail = clean_cut(reply.value, reply.value_tail, secrets)
    return head + marker + tail, length


def _clean_opt(text: str | None, secrets: tuple[str, ...]) -> str | None:
    return None if text is None else clean_inline_cut(text, secrets)


def died_unrun(info: KernelInfo) -> CellResult:
    """A cell whose worker, started for it, died before it ran (``info`` names the loss): a filecell
    kernel whose cwd a cell removed started worker after worker for it, a hang."""
    note = (info.note or "").replace("between cells", "before it ran the cell, on a new worker (the next cell tries another)")
    return CellResult(status="died", kernel=info.replace(note=note))


def not_run(info: KernelInfo, *, cancelled: bool) -> CellResult:
    """The final result of a cell that was never sent: ``restart()`` overtook it while it waited for
    its turn (``died``, ``reason="reset"``, naming ``info.generation``, the one it was sent to), or
    its cancel switch was set before (``cancelled``: ``timeout``, ``watchdog="interrupted"``, state
    kept, as for a cell the ladder's SIGINT cut before it began)."""
    if cancelled:
        return CellResult(status="timeout", watchdog="interrupted",
                          kernel=info.replace(note="not run: its cancel switch was set before it was sent"))
    note = f"not run: restart() was called while the cell waited for its turn on generation {info.generation}"
    return CellResult(status="died", kernel=info.replace(state_lost=True, reason="reset", exit_code=None,
                                                          signal=None, note=note))
