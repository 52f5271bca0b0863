"""KernelRuntime: what runs a kernel now, across its generations: the runner (a
:class:`~.link.RunnerLink`) and the worker inside it.

The runtime brings them up (first launch, a new runner after the old one was lost, a fresh
worker after a death), ends them (kill the worker, discard the runner, shut down), and counts
generations: every new runner or worker after the first is one more. Each of these moves goes
through the handle's :class:`~.lifecycle.Lifecycle`; a move refused because the kernel is
shutting down raises :class:`~pytest_hermes_kernel.errors.KernelShutdownError`, and a runner
that started meanwhile is ended at once, so it never outlives its handle.

The runtime knows nothing of cells or losses: :class:`~.handle.KernelHandle` decides when to
bring a kernel up and what the next cell reports.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError, KernelShutdownError, KernelStartError, TransportLostError
from . import census
from .channel import ChannelClosed
from .contract import Launched, LaunchSpec, Transport
from .lifecycle import KernelState, Lifecycle
from .link import RunnerLink, say_hello
from .options import KernelOptions
from .output import MARKER_RESERVE_BYTES, scrub_env
from .results import ExitInfo, WatchdogOutcome

__all__ = ["KernelRuntime", "launch_spec"]

S = KernelState


class KernelRuntime:
    """The runner and worker of one kernel (see module docstring).

    :param transport: where the kernel runs.
    :param options: how it is started (``start_timeout``, ``shutdown_grace``, environment, ...).
    :param kernel_id: the kernel's id.
    :param token: the kernel's attach token.
    :param life: the kernel's state, shared with the handle.
    :param on_started: called with the launch record after every runner that said hello.
    """

    def __init__(self, transport: Transport, options: KernelOptions, *, kernel_id: str, token: str,
                 life: Lifecycle, on_started: Callable[[Launched], None]) -> None:
        self.transport = transport
        self.options = options
        self.kernel_id = kernel_id
        self.token = token
        self.life = life
        self.on_started = on_started
        self.link: RunnerLink | None = None
        self.ending: RunnerLink | None = None
        """The runner a :meth:`stop` is ending now (no longer :attr:`link`): :meth:`end_at_once` ends it too."""
        self.worker_pid: int | None = None
        self.generation = 0
        self.restart_count = 0
        self.start_note = self.shut_by = ""  # shut_by: who ended it and why (``shutdown(why=...)``)

    def shut_error(self, generation: int | None = None) -> KernelShutdownError:
        """The error for a move refused because the kernel is shut down (sent to ``generation``, default: the current)."""
        generation = self.generation if generation is None else generation
        why = f": {self.shut_by}" if self.shut_by else ""
        return KernelShutdownError(f"kernel {self.kernel_id} (generation {generation}) is shut down{why}",
                                   kernel_id=self.kernel_id, generation=generation)

    def require_link(self) -> RunnerLink:
        """The current runner.

        :raises KernelShutdownError: if there is none (only a shutdown takes it away mid-use).
        """
        link = self.link
        if link is None:
            raise self.shut_error()
        return link

    # ------------------------------------------------------------------------------ bringing up
    def launch(self, *, next_generation: bool = False) -> None:
        """Launch a runner from ``NEW`` or ``RUNNER_LOST`` and wait for its hello.

        :param next_generation: the runner replaces a lost one: the generation moves on once it
            said hello, before ``on_started`` (which saw the old number: a failing test's story
            listed the new runner's pids under the lost runner's generation too).

        A failed start returns to the state it came from (so a relaunch stays a new generation).
        Its runner, when not seen gone (its host is silent or paused), stays this kernel's: a later
        launch ends it first (:meth:`end_lost_runner`) and ``shutdown()`` says whether that was
        confirmed. A start cut short by Ctrl-C (a ``BaseException`` that is no error) ends its runner first.

        :raises KernelStartError: if the runner did not start or say hello in time, or a failed
            start's runner was still not seen gone and could not be ended.
        :raises KernelShutdownError: if the kernel was shut down before or while it started.
        """
        prior = self.life.state
        self.end_lost_runner()  # a failed start's runner not seen gone: never a second one beside it
        if not self.life.advance(S.STARTING):
            raise self.shut_error()
        try:
            hello = self._connect()
        except BaseException as exc:
            if not isinstance(exc, Exception):  # Ctrl-C, a handler's SystemExit: the caller never gets
                self.discard(cut_short=True)    # this kernel, so what the start launched ends here
            self.life.advance(prior)
            if self.life.stopping:
                raise self.shut_error() from None
            raise
        self.worker_pid = hello.get("worker_pid")
        if not self.life.advance(S.WORKER_DEAD if self.worker_pid is None else S.IDLE):
            self.discard()  # shut down while it started: it must not outlive the handle
            raise self.shut_error()
        launched = self.require_link().launched
        self.start_note = launched.note
        if prior is S.NEW:  # this kernel's first runner: counted once, a relaunch is a generation
            census.note("started", self.kernel_id)
        if next_generation:
            self._next_generation()
        self.on_started(launched)

    def adopt(self, launched: Launched, token: str) -> dict[str, Any]:
        """Take over a runner that already runs (a kept kernel, ``launched`` from :meth:`Transport.attach_kept`):
        attach with ``token``, await its hello and return it; ``NEW -> IDLE`` (``WORKER_DEAD`` when its worker is gone).

        :raises TransportLostError: if the runner does not answer (gone, or the token is refused).
        """
        self.token = token
        self.life.to(S.STARTING)
        link = RunnerLink(self.transport, launched, token=token, kernel_id=self.kernel_id)
        try:
            hello = say_hello(link.channel, token=token, attach=True, pending=(), timeout=self.options.start_timeout)
        except (TimeoutError, ChannelClosed) as exc:
            link.channel.close("attach failed")
            self.life.to(S.NEW)
            raise TransportLostError(f"kernel {self.kernel_id}: the kept runner did not answer: {exc}") from None
        self.link = link
        self.worker_pid = hello.get("worker_pid")
        self.life.to(S.WORKER_DEAD if self.worker_pid is None else S.IDLE)
        return hello

    def take_start_note(self) -> str:
        """What the last launch said about itself (``Launched.note``), once: for the next result's ``kernel.note``."""
        note, self.start_note = self.start_note, ""
        return note

    def _connect(self) -> dict[str, Any]:
        spec = launch_spec(self.kernel_id, self.token, self.options, here=self.transport.runs_on_this_host)
        link = RunnerLink.launch(self.transport, spec, token=self.token)
        self.link = link  # before the hello: a shutdown meanwhile finds the runner and ends it
        try:
            return link.hello(self.options.start_timeout)
        except KernelStartError:
            if self.link is link and link.ended:
                self.link = None  # else it may still run: it stays this kernel's runner, ended later
            raise

    def relaunch(self) -> None:
        """A new runner in place of a lost one (a new generation); the old one is ended first.

        :raises KernelStartError: if the old runner could not be ended (:meth:`end_lost_runner`),
            or the new one does not start.
        """
        self.end_lost_runner()
        self.launch(next_generation=True)

    def start_worker(self) -> None:
        """A fresh worker from ``WORKER_DEAD`` (a new generation).

        :raises KernelStartError: if the runner reports no worker.
        :raises KernelShutdownError: if the kernel is shut down.
        """
        self.worker_pid = self.require_link().start_worker(self.options.start_timeout)
        if not self.life.advance(S.IDLE):
            raise self.shut_error()
        self._next_generation()

    def _next_generation(self) -> None:
        self.generation += 1
        self.restart_count += 1

    def bring_up(self, may_restart: Callable[[], None]) -> None:
        """A runner and a worker for the next cell, whatever is missing.

        :param may_restart: asked before a replacement (a new generation); raises to refuse it.
        :raises KernelStartError: if a runner or worker does not start.
        """
        if self.life.is_(S.NEW):
            self.launch()
        elif self.life.is_(S.RUNNER_LOST):
            self.end_lost_runner()
            may_restart()
            self.relaunch()
        elif self.life.is_(S.WORKER_DEAD):
            may_restart()
            _fresh_worker(self)  # (its runner may have gone too, between cells: every later cell raised ChannelClosed)

    def replace(self) -> None:
        """A fresh kernel in place of a dead one: a new runner if it was lost, else a new worker.

        :raises KernelStartError: if the replacement does not start.
        :raises KernelShutdownError: if the kernel is shut down.
        """
        if self.life.stopping:
            raise self.shut_error()
        if self.life.is_(S.NEW, S.RUNNER_LOST):
            self.relaunch()
            return
        _fresh_worker(self)

    def reset_after_timeout(self, *, abandoned: bool, restart: bool, silent_s: float | None = None
                            ) -> tuple[WatchdogOutcome, str]:
        """The watchdog's last rung after it killed the kernel: replace it, unless it cannot.

        :param abandoned: no result came even after the kill (the runner was killed from outside).
        :param restart: ``WatchdogPolicy.restart``: start a replacement at all.
        :param silent_s: with ``abandoned``: see :func:`_ineffective`.
        :returns: the watchdog outcome (``reset``, ``reset_failed``, ``abandoned``) and its note:
            ``abandoned`` when the runner was not seen gone after its kill from outside (it runs
            frozen, or its host could not be reached: "cannot tell" is not "dead").
        """
        ineffective = _ineffective(silent_s, self.options.watchdog.interrupt_grace, self.link)
        if abandoned and not self.confirmed_dead():
            return "abandoned", (f"{ineffective} and the kernel could not be reached; not reset: the work may still "
                                 "be running (the kill was not confirmed and the runner was not seen gone: is its "
                                 "host paused or unreachable?)")
        if not restart:  # none tried: no "failed to start"
            return "reset_failed", f"{ineffective}; the kernel was killed and not restarted (WatchdogPolicy.restart=False)"
        try:
            self.replace()
        except (KernelStartError, KernelShutdownError, ChannelClosed, TimeoutError) as exc:
            return "reset_failed", f"{ineffective}; the kernel was killed but its replacement failed to start: {exc}"
        return "reset", f"{ineffective}; the kernel was killed (SIGKILL) and restarted: state lost"

    # ------------------------------------------------------------------------------ ending
    def kill_worker(self) -> None:
        """Kill the worker (and its process group); ``IDLE -> WORKER_DEAD``.

        :raises KernelShutdownError: if the kernel is shut down.
        """
        self.require_link().kill_worker()
        if not self.life.advance(S.WORKER_DEAD):
            raise self.shut_error()

    def confirmed_dead(self) -> bool:
        """Whether there is no runner, or the transport saw it gone (:meth:`RunnerLink.seen_gone`;
        not: it cannot tell, which ``alive()`` also answers ``False``)."""
        link = self.link
        return link is None or link.seen_gone()

    def end_lost_runner(self) -> None:
        """End and forget the runner given up on (lost, or its cell abandoned), before another
        starts in its place.

        :raises KernelStartError: if it was not seen gone and its kill was not confirmed (its
            container is paused: frozen, not gone; its ssh host is silent: it cannot tell). It
            stays this kernel's runner, so a later cell or ``shutdown()`` ends it once it can be
            reached; no second runner starts beside it.
        """
        link = self.link  # kept meanwhile: a shutdown meanwhile finds the runner and ends it
        if link is None or link.discard():
            self.link = None
            return
        if self.life.stopping:
            raise self.shut_error()
        cause, hint = (f"({link.refused[2:]})", "") if link.refused else (  # a refusal for good: not a paused host
            f"(the kill was not confirmed: is its host paused or unreachable?{link.unanswered})", "\nHint: once its host answers again "
            "(e.g. after `docker unpause`), the next cell ends it and starts a fresh one, and shutdown() ends it")
        raise KernelStartError(f"kernel {self.kernel_id}: its runner ({link.launched.label}) was not seen gone and could "
                               f"not be ended {cause}; no new runner is started beside it{hint}", kernel_id=self.kernel_id)

    def discard(self, cut_short: bool = False) -> None:
        """End and forget the current runner, if any (its channel, process and kernel dir); ``cut_short``:
        for a call a Ctrl-C cut short, to its end however many more come (:meth:`RunnerLink.discard_despite_signals`)."""
        link, self.link = self.link, None
        if link is not None:
            link.discard_despite_signals() if cut_short else link.discard()

    def keep(self, orphan_timeout: float) -> ExitInfo:
        """Leave the runner running without this host (post-mortem; :meth:`RunnerLink.keep`), then
        detach from it. A runner that does not confirm is shut down instead.

        :param orphan_timeout: seconds the runner lives on with no client attached.
        :returns: ``ExitInfo(step="kept")``.
        :raises TransportLostError: if the runner did not confirm (it was shut down).
        """
        link, self.link = self.link, None
        census.note("ended", self.kernel_id)  # kept or shut down: this host's kernel either way
        if link is None:
            raise TransportLostError(f"kernel {self.kernel_id} has no runner to keep")
        try:
            link.keep(orphan_timeout, self.options.start_timeout)
        except TransportLostError:
            link.stop(False, self.options.shutdown_grace)
            raise
        link.detach()
        return ExitInfo(step="kept", confirmed=False,
                        note=f"kept for post-mortem: it ends after {orphan_timeout:g} s without a client")

    def stop(self, now: bool) -> ExitInfo:
        """Shut the runner down (see :meth:`RunnerLink.stop`); ``already-exited`` if there is none.

        :param now: SIGKILL the whole tree at once instead of asking.
        """
        link = self.ending = self.link
        self.link = None
        census.note("ended", self.kernel_id)
        if link is None:
            return ExitInfo(step="already-exited")
        try:
            return link.stop(now, self.options.shutdown_grace)
        finally:
            self.ending = None

    def end_at_once(self, held: str) -> ExitInfo:
        """End the runner from outside now (:meth:`RunnerLink.end_at_once`): ``shutdown()`` runs
        inside this thread's own ``held`` (a signal handler landed there), which holds the channel.

        :param held: what the frame below is doing with the channel (for the notes).
        :returns: ``sigkill`` (``confirmed`` when the runner was seen gone), or ``already-exited``
            when there is no runner (a start below has not launched one yet: it ends the one it
            launches, as for any shutdown while it starts).
        """
        link, self.link = self.link, None
        if link is not None:
            census.note("ended", self.kernel_id)
        link = link or self.ending
        if link is None:
            return ExitInfo(step="already-exited")
        why = f"shut down from inside this thread's own {held} (a signal handler?): killed from outside at once"
        confirmed = link.end_at_once(why)
        return ExitInfo(step="sigkill", signal=9, confirmed=confirmed,
                        note=why if confirmed else f"{why}; the kill was not confirmed: it may still run")


def _fresh_worker(runtime: KernelRuntime) -> None:
    """A new worker for ``runtime`` (the idle one killed first), or a new runner if the runner went
    with its channel (killed from outside, its host restarted, its transport closed).

    :raises KernelStartError: if the replacement does not start.
    :raises KernelShutdownError: if the kernel is shut down.
    """
    try:
        if runtime.life.is_(S.IDLE):
            runtime.kill_worker()
        runtime.start_worker()
    except ChannelClosed:
        if not runtime.life.advance(S.RUNNER_LOST):
            raise runtime.shut_error() from None
        runtime.relaunch()


def launch_spec(kernel_id: str, token: str, o: KernelOptions, *, here: bool = True) -> LaunchSpec:
    """What a transport needs to start a runner: its config, scrubbed environment, cwd, python.

    :param token: the attach token; it travels in the config (the runner's stdin), never argv.
    :param here: the kernel runs on this machine: a relative ``cwd`` is the caller's subdirectory.
    :raises ConfigError: for a relative ``cwd`` of a kernel elsewhere (see :func:`kernel_cwd`).
    """
    o = o if not o.cwd or os.path.isabs(o.cwd) else dataclasses.replace(o, cwd=kernel_cwd(o.cwd, here))
    env = scrub_env(os.environ, allow=o.env_allow, keep_all=o.inherit_env, extra={
        "PYTHONUNBUFFERED": "1", "PYTHONIOENCODING": "utf-8", "PYTHONDONTWRITEBYTECODE": "1",
        "HERMES_KERNEL_ID": kernel_id, "HERMES_KERNEL_HOST_PID": str(os.getpid()), **o.env})
    config = {"kernel_id": kernel_id, "token": token, "cwd": o.cwd,
              "max_output_bytes": max(0, o.max_output_bytes - MARKER_RESERVE_BYTES),
              "orphan_timeout": o.orphan_timeout, "exit_grace": o.exit_grace,
              "oom_counter_file": o.oom_counter_file, "cgroup_procs": o.cgroup_procs}
    return LaunchSpec(kernel_id=kernel_id, config=config, env=env, cwd=o.cwd, python=o.python,
                      start_timeout=o.start_timeout)


def kernel_cwd(cwd: str, here: bool) -> str:
    """A relative ``cwd``, entered once by the runner and its workers alike: under the caller's
    working directory when the kernel runs on this machine (as ``subprocess`` reads it); a kernel
    elsewhere has no such directory (its runner and each worker entered it in turn: the first
    cell died, ``exit_code=70``), so there it is refused.

    :raises ConfigError: if the kernel does not run on this machine.
    """
    if here:
        return os.path.abspath(cwd)
    raise ConfigError(f"cwd={cwd!r} is relative: give an absolute path on the kernel's host (a kernel that does not "
                      "run on this machine has no directory of the caller's to resolve it against)")


def _ineffective(silent_s: float | None, grace: float, link: RunnerLink | None = None) -> str:
    """What a timeout's note says of the interrupt; ``silent_s``: seconds the runner had not answered
    keepalives when it was killed (its stream stalled: the interrupt may never have reached it);
    ``grace``: ``WatchdogPolicy.interrupt_grace`` (0: the interrupt was given no time); ``link``: the
    runner's, whose channel may hold an unfinished frame (bytes of its stream lost on the way)."""
    if silent_s is None:
        unfinished = link.channel.unfinished_frame() if link is not None else ""
        said = "the interrupt was ineffective" if grace else "the interrupt was given no time (WatchdogPolicy.interrupt_grace=0)"
        return f"{said} ({unfinished})" if unfinished else said
    return (f"no word from the kernel runner for {silent_s:.1f} s (keepalives unanswered, or the runner seen "
            "stopped: it, or what carries its stream, a relay or a kernel server, was frozen or hung): the interrupt "
            "may never have reached it")
