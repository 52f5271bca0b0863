"""The core's port: what the kernel core needs from a transport (ports and adapters).

The core (handle, registry, channel) is written against this module alone; transports
implement it and import the core, never the other way. A transport starts the kernel runner
and hands back a :class:`Launched` record with a :class:`ByteStream` to it. Who calls what,
and when:

* :meth:`Transport.launch`: :class:`~pytest_hermes_kernel.kernel.handle.KernelHandle`, once per
  runner (the first start, and again only when the runner itself was lost).
* :meth:`Transport.reattach`: the handle, when the stream broke but the runner may still be
  alive (``reattachable`` transports: docker, ssh); the default refuses.
* :meth:`Transport.kill`: the handle, as the last resort when the runner does not answer: it
  ends the runner's whole process tree from outside and returns whether it saw it gone.
* :meth:`Transport.alive`: the handle, to probe the runner without the channel.
* :meth:`Transport.seen_gone`: the handle, before it counts a runner dead (the watchdog's reset,
  replacing a lost runner, ``shutdown()``'s ``confirmed``): ``False`` also when the transport
  cannot tell, which ``alive()`` may answer ``False`` too.
* :meth:`Transport.reap`: the handle, after the runner said goodbye: wait for it to end.
* :meth:`Transport.frozen`: the handle, while a shutdown request goes unanswered: whether the
  runner's host is frozen (a paused container), so waiting longer is of no use.
* :meth:`Transport.cleanup`: the handle, after the kernel is gone: remove what the launch left
  (kernel dir); never raises.
* :meth:`Transport.runner_log`: the handle, for the error of a start that failed.
* :meth:`Transport.sweep_stale`: the registry's reaper, for kernel dirs of dead hosts.
* :meth:`Transport.locator` (:meth:`Transport.kept_locator`), :meth:`Transport.kernel_processes`, :meth:`Transport.signal_pid`,
  :meth:`Transport.leak_snapshot`, :meth:`Transport.leak_cleanup`: the leak checker and the
  fault injector (other processes, other layers).
* :meth:`Transport.keep_address`, :meth:`Transport.release`, :meth:`Transport.attach_kept`: the
  handle, when a failed
  test's kernel is kept for post-mortem (``keepable`` transports), and ``hermes-kernel
  attach``/``exec``/``sweep --kept`` in a later process, to reach it again from its locator.
* :attr:`Transport.orphan_timeout`, :attr:`Transport.attached_after_host_s`: the fault layer, for
  the bound within which a kernel must be gone after its host died.
* :meth:`Transport.files`: the handle's ``upload`` / ``download``: the kernel's files under its
  working dir (:class:`~.files.KernelFiles`); the default refuses.
* :meth:`Transport.close`: whoever made the transport, when done with it.

Every optional capability is a method here with a default; callers never probe with
``getattr``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import types
from collections.abc import Iterator
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from ..errors import FileTransferError, TransportLostError
from .files import KernelFiles

__all__ = ["ByteStream", "LaunchSpec", "Launched", "Transport", "activity", "note_activity", "quiet_activity"]

#: Methods of a transport that cannot start anything: calling them is not activity (the leak
#: probes call the first two on every test; a start that lost its runner asks ``was_closed``).
_NOT_ACTIVITY = frozenset({"leak_snapshot", "leak_cleanup", "describe", "was_closed"})
_activity = [0]
_quiet = threading.local()  # ``on`` while this thread's calls are not activity


def note_activity() -> None:
    """Count one thing done towards a kernel in this process (a frame sent or received on a
    channel, a call of a transport's public method); see :func:`activity`."""
    if not getattr(_quiet, "on", False):
        _activity[0] += 1


@contextlib.contextmanager
def quiet_activity() -> Iterator[None]:
    """What this thread calls inside is not :func:`activity` (the leak probe's own round trips)."""
    _quiet.on = True
    try:
        yield
    finally:
        _quiet.on = False


def activity() -> int:
    """How much this process has done towards kernels so far (a counter, never reset).

    Everything a transport can leave behind where its kernels run (a runner, a process a cell
    started, a kernel dir, a container, an ssh channel) comes from a call of one of its public
    methods, from a cell, whose frames cross a channel, or from the layers under the transports,
    which count what they start too (a container, an ssh channel). While this count stands still, a
    transport's :meth:`Transport.leak_snapshot` can only find what it found the last time: the
    leak probe reuses it (for a short while, see :mod:`pytest_hermes_kernel.leaks.probes`).
    """
    return _activity[0]


def _counted(fn: Any) -> Any:
    @functools.wraps(fn)
    def method(*args: Any, **kwargs: Any) -> Any:
        note_activity()
        return fn(*args, **kwargs)

    return _watched(method) if fn.__name__ == "launch" else _closing(method) if fn.__name__ == "close" else method


def _closing(close: Any) -> Any:
    """A transport's own ``close()`` also tells the leak probes (``watch_launches``'s ``closed``): probed
    once more, then no longer (only ``close_transport()`` did: a conftest's ``transport.close()``
    left every earlier test's transport probed at each later teardown)."""
    @functools.wraps(close)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return close(self, *args, **kwargs)
        finally:
            if _on_closed:
                _on_closed[0](self)

    return method


_launches = threading.local()  # this thread's launches under way: [covered, a nested one is probed]
_probed: list[Any] = []  # ``probed(transport, add) -> bool``: set by the transports package
_on_closed: list[Any] = []  # ``closed(transport)``: the same, for a transport's own close()


def watch_launches(probed: Any, closed: Any = None) -> None:
    """Have ``probed(transport, add=False) -> bool`` say whether the leak probes look through a
    transport, and (``add=True``) make them, for each transport that has launched a kernel: one built
    directly (``DockerTransport(...)``, a conftest's own) was never probed, and what its kernels
    left in its container or on its host passed unseen. Not for one that launched through another
    that is probed (a wrapper: its probe asks the inner one), nor under one that is (a spread's member).
    ``closed(transport)`` is called after each transport's own ``close()`` (:func:`_closing`)."""
    _probed[:] = [probed]
    _on_closed[:] = [] if closed is None else [closed]


def _watched(launch: Any) -> Any:
    @functools.wraps(launch)
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        frames = _launches.__dict__.setdefault("frames", [])
        frame = [any(f[2] for f in frames), False, False]  # covered by an outer probed one; inner probed; probed
        frame[2] = bool(_probed) and _probed[0](self)
        frames.append(frame)
        try:
            launched = launch(self, *args, **kwargs)
            if _probed and not (frame[0] or frame[1] or frame[2]):  # (a launch that failed left nothing)
                frame[2] = _probed[0](self, add=True)
            return launched
        finally:
            frames.pop()
            if frames:
                frames[-1][1] = frames[-1][1] or frame[2]

    return method


class ByteStream(Protocol):
    """What a transport hands the channel: a bidirectional byte stream.

    ``recv`` returns ``b""`` at EOF and raises :class:`TimeoutError` when nothing arrived within
    ``timeout`` seconds (``None``: wait forever). ``close`` must make a blocked ``recv`` return.
    """

    def send(self, data: bytes) -> None:
        """Write all of ``data``."""

    def recv(self, timeout: float | None) -> bytes:
        """Some bytes; ``b""`` at EOF. :raises TimeoutError: if none arrived within ``timeout`` s."""

    def close(self) -> None:
        """Close the stream; a ``recv`` blocked in another thread returns."""


@dataclass(frozen=True)
class LaunchSpec:
    """What a runner needs.

    :param kernel_id: uuid4 hex of the kernel.
    :param config: JSON-able runner config; goes to the runner's stdin, never argv.
    :param env: the kernel's complete environment (already scrubbed and redacted).
    :param cwd: working directory of cells; ``None``: the transport's default.
    :param python: interpreter; ``None``: the transport's default.
    :param start_timeout: seconds the caller gives the start (``KernelOptions.start_timeout``): a
        launch waits no longer than this for an answer from where the kernel runs (a kernel
        server's reply); ``None``: only the transport's own limits.
    """

    kernel_id: str
    config: dict[str, Any] = field(repr=False)  # holds the token: never in a repr (B43)
    env: dict[str, str] = field(repr=False)
    cwd: str | None = None
    python: str | None = None
    start_timeout: float | None = None


@dataclass
class Launched:
    """A started runner: the typed result of :meth:`Transport.launch`.

    :param stream: the channel's byte stream to the runner's supervisor.
    :param pid: the supervisor's pid where the kernel runs (inside the container for docker).
    :param kernel_dir: the runner's kernel dir where the kernel runs.
    :param label: a short text for names and messages (``"pid 123"``, ``"container ab12"``).
    :param extra: the transport's own facts about this launch (a ``Popen``, a container id);
        only the transport that made it reads them.
    :param note: what the kernel's first result says about its start in ``kernel.note`` (e.g. a
        kernel server was unavailable and the runner was spawned instead); ``""``: nothing.
    """

    stream: ByteStream
    pid: int | None = None
    kernel_dir: str | None = None
    label: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    note: str = ""


class Transport(ABC):
    """Base class of local, docker, ssh, filecell and user transports."""

    name: ClassVar[str] = "abstract"
    reattachable: ClassVar[bool] = False
    """Whether a broken stream may be re-attached to a runner that kept its state."""
    keepable: ClassVar[bool] = False
    """Whether a kernel can outlive its host for post-mortem and be reached again from its
    :meth:`locator` (:meth:`keep_address`, :meth:`attach_kept`)."""
    orphan_timeout: float | None = None
    """Seconds a detached runner lives with no host attached, when the transport sets it for every
    kernel; ``None``: each kernel's ``KernelOptions.orphan_timeout`` applies (instances of docker,
    ssh and filecell set their own)."""
    attached_after_host_s: float = 0.0
    """Seconds a client of the transport's own may stay attached to a runner after its host died,
    before the orphan timer can start (filecell: a poll in flight, then its holder)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Every public method a transport defines counts as :func:`activity` when called."""
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if isinstance(value, types.FunctionType) and not name.startswith("_") and name not in _NOT_ACTIVITY \
                    and not getattr(value, "__isabstractmethod__", False):
                setattr(cls, name, _counted(value))

    @property
    def runs_on_this_host(self) -> bool:
        """Whether kernels run on this machine's kernel (a memory cgroup made here can hold them)."""
        return False

    @abstractmethod
    def launch(self, spec: LaunchSpec) -> Launched:
        """Start a kernel runner and connect to it.

        :raises KernelStartError: if it cannot be started; the message says why.
        """

    def reattach(self, launched: Launched) -> ByteStream:
        """Open a new stream to a runner whose stream broke.

        :raises TransportLostError: if the runner cannot be reached (always, by default).
        """
        raise TransportLostError(f"the {self.name} transport cannot re-attach to a kernel runner")

    @abstractmethod
    def kill(self, launched: Launched) -> bool:
        """SIGKILL the runner's whole process tree from outside; True when seen gone."""

    @abstractmethod
    def alive(self, launched: Launched) -> bool:
        """Whether the runner's supervisor process still exists.

        Where the runner cannot be reached (a silent ssh host, a failing docker engine) the answer
        may be ``False`` although it runs: :meth:`cleanup` then ends it before removing its dir,
        and such a transport says what it saw in :meth:`seen_gone`.
        """

    def seen_gone(self, launched: Launched) -> bool:
        """Whether the runner was *seen gone*: its supervisor ended (or went with the container or
        host it ran in), as the transport saw it, now or when it killed or reaped it.

        ``False`` while it runs (frozen in a paused container too) and also when the transport
        cannot tell (a silent ssh host, a docker engine that does not answer): the core reads only
        ``True`` as proof that the runner ended. It resets a kernel after a timeout, starts a
        runner in place of a lost one and reports a shutdown ``confirmed`` only then; otherwise the
        cell is ``abandoned`` ("the work may still be running") and the runner stays the kernel's,
        to be ended once it can be reached.

        The default is ``not alive(launched)``: right for a transport whose :meth:`alive` answers
        ``False`` only for a runner it saw gone (local). A transport whose :meth:`alive` may say
        ``False`` when it cannot tell (ssh, docker, filecell) overrides this.
        """
        return not self.alive(launched)

    def frozen(self, launched: Launched) -> bool:
        """Whether the runner or its host is seen frozen now (stopped; docker: its container paused): it
        answers nothing until it thaws, so a shutdown stops waiting for its reply and ends it from
        outside (confirmed only when seen gone: a paused container's is not). ``False`` when it is
        not, or the transport cannot tell (the default: never seen). Never raises.
        """
        return False

    def reap(self, launched: Launched, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for a runner that was asked to exit; True when seen gone.

        The default probes :meth:`seen_gone` once (a remote probe costs a round trip); a transport
        that can wait cheaply (local: ``Popen.wait``) waits and leaves no zombie.
        """
        return self.seen_gone(launched)

    def cleanup(self, launched: Launched) -> None:
        """Remove the launch's leftovers (kernel dir, relay); never raises. A transport whose
        :meth:`alive` may say ``False`` when it cannot tell (ssh, docker) kills a runner not seen
        gone first: its dir never goes while the runner may run."""

    def exit_status(self, launched: Launched, timeout: float) -> int | None:
        """The runner's exit status once it ended, waiting up to ``timeout`` seconds for it.

        :returns: the exit code (``-N``: killed by signal ``N``), or ``None`` when it still runs
            or the transport cannot tell (the default).
        """
        return None

    def runner_log(self, launched: Launched, lines: int = 20) -> str:
        """The last ``lines`` lines of the runner's log, for error messages; ``""`` if none."""
        return ""

    def host_log(self, launched: Launched, lines: int = 20) -> str:
        """The last ``lines`` lines of the log of what hosts the kernel (a container's output, an
        sshd's), for a failing test's report; ``""`` if there is none (the default)."""
        return ""

    def sweep_stale(self, max_age_s: float) -> int:
        """Remove kernel dirs of dead hosts or older than ``max_age_s`` seconds; how many."""
        return 0

    def locator(self, launched: Launched) -> dict[str, Any]:
        """Picklable facts another process needs to find this kernel (see :meth:`kernel_processes`)."""
        return {"runner_pid": launched.pid, "kernel_dir": launched.kernel_dir}

    def kept_locator(self, launched: Launched) -> dict[str, Any]:
        """The :meth:`locator` recorded for a kernel kept for post-mortem, which must stay valid once
        this run is gone: by default the locator itself; a transport whose way in needs a file of
        the run (ssh: the run's private key) copies it beside the record here (only here: the
        locator is asked for often, and has no side effects)."""
        return self.locator(launched)

    def keep_address(self, launched: Launched) -> str | None:
        """Where a kept runner listens for clients once its host is gone: a unix socket path in its
        private kernel dir for a runner whose channel is its lease (local); ``None`` (the default)
        when it listens already (a detached runner: docker, ssh)."""
        return None

    def release(self, launched: Launched) -> None:
        """Drop this host's hold on a runner that lives on without it (a kept kernel: pidfds,
        relays), never ending the runner or touching its kernel dir; never raises."""

    def attach_kept(self, locator: dict[str, Any]) -> Launched:
        """The launch record of a kept runner found by its :meth:`locator` (written by another
        process), with a fresh stream to it; the caller sends the ``attach`` frame.

        :raises TransportLostError: if it cannot be reached (always, by default: not ``keepable``).
        """
        raise TransportLostError(f"the {self.name} transport cannot reach a kept kernel runner")

    def cleanup_kept(self, locator: dict[str, Any]) -> None:
        """Remove what a kept kernel whose runner is gone for good left where it ran (its kernel
        dir), found by its :meth:`locator`; called by ``hermes-kernel sweep --kept`` before it
        removes the record, and by the host harness once a kernel it killed as a survivor of its
        SIGKILLed host is gone. By default nothing (a container goes with the container sweep); never raises."""

    def kernel_processes(self, kernel_id: str, locator: dict[str, Any] | None = None) -> list[str]:
        """Descriptions of live processes that belong to kernel ``kernel_id``, wherever it runs.

        Every kernel process carries ``HERMES_KERNEL_ID`` in its environment (runner, worker and
        what cells start); remote transports run the same scan inside the container or host.

        :raises TransportLostError: if the place the kernel runs cannot be asked (never an empty
            list, which reads as "nothing of the kernel is left").
        """
        from ..procs import processes_with_env

        return processes_with_env("HERMES_KERNEL_ID", kernel_id)

    def leak_snapshot(self, host_pid: int) -> dict[str, dict[str, str]]:
        """What this transport holds or made where its kernels run, for the leak checker.

        ``{kind: {identity: description}}``: processes of kernels of host ``host_pid`` listed
        where the kernel runs (through the transport, so a remote engine or host is covered),
        containers of the run nobody holds, open ssh channels. Identities must be unique across
        transports and stable while the thing lives. The default has nothing (local kernels are
        in this machine's process table, which the host probes read).
        """
        return {}

    def leak_cleanup(self, kind: str, identity: str) -> None:
        """End one thing :meth:`leak_snapshot` reported (kill, remove, close); never raises."""

    def note_leftovers(self, launched: Launched, kernel_id: str, processes: list[tuple[int, int, str]]) -> None:
        """The runner of ``launched`` (kernel ``kernel_id``) said, as it ended, that its cells left
        ``processes`` running where it ran (``(pid, start ticks, command line)`` each: a process
        in a session of its own, with no kernel marker, that the runner had adopted): list them in
        :meth:`leak_snapshot` while they live. Local, docker and ssh do; the default does nothing
        (such a process is then not seen by the leak check)."""

    def signal_pid(self, launched: Launched | None, pid: int, sig: int) -> None:
        """Send ``sig`` to ``pid`` where the kernel runs (fault injection: ``kernel_sigkill``)."""
        os.kill(pid, sig)

    def files(self, launched: Launched, workdir: str) -> KernelFiles:
        """The files of the kernel of ``launched`` under ``workdir`` (its working dir), for one
        transfer (``with`` it: it is closed after).

        :raises FileTransferError: if the transport cannot move files (always, by default).
        """
        raise FileTransferError(f"the {self.name} transport cannot move files in or out of a kernel",
                                path=None, problem="not supported")

    def describe(self) -> str:
        """One line for the report header."""
        return self.name

    def was_closed(self) -> bool:
        """Whether :meth:`close` was called: a start whose runner's channel ended before its hello
        then says the transport was closed, not that the runner ended. ``False`` by default (a
        transport that does not tell: its start says what its runner's channel said).
        """
        return False

    def close(self) -> None:
        """Release what the transport holds (containers, connections); idempotent."""
        if _on_closed:  # (a subclass's own close() is wrapped to do the same: __init_subclass__)
            _on_closed[0](self)
