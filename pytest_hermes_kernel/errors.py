"""One exception hierarchy for the whole package, and the leak warning.

Every exception of the package is defined here, under :class:`HermesKernelError`. An error's *facts* are
the keyword-only parameters of its ``__init__``: each is set as an attribute of the same name, typed and
documented with ``:param:`` in the class docstring. Every exception here pickles with its type, message and
facts (pytest-xdist and the host harness ship them between processes): ``__reduce__`` rebuilds it from
:attr:`HermesKernelError.facts`.

Builtins are mixed in only where callers catch them (``TimeoutError``, ``ConnectionError``,
``ValueError``, ``PermissionError``, ``AssertionError``).

This module is below everything (it imports nothing of the package), so facts whose type lives in the
kernel core (:class:`~pytest_hermes_kernel.kernel.results.KernelInfo`,
:class:`~pytest_hermes_kernel.kernel.results.CellResult`) are annotated ``Any`` and named in their ``:param:``.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

__all__ = [
    "HermesKernelError", "ConfigError", "ProtocolError", "FrameTooLargeError", "KernelStartError",
    "KernelServerUnavailable",
    "KernelDiedError", "HostGoneError", "KernelInUseError", "KernelShutdownError", "KernelForkedError", "KernelStateError",
    "ChannelHeldHereError",
    "TransportLostError", "ExecNotStartedError", "ContainerGoneError", "ChannelClosed", "ExitStatusUnknownError",
    "TransportUnavailableError", "ImageBuildError", "ContainerStartError", "ImageMissingError", "SharedLockTimeout",
    "UnsafeRunDirError",
    "FileTransferError", "UnsafePathError", "TransferTooLargeError", "CellTimeoutError",
    "CellInterrupted", "KernelResetAfterTimeout", "KernelResetFailed",
    "KernelAbandoned", "ToolCallRefused", "LeakError", "ScenarioFailure", "HermesLeakWarning",
    "HermesLeakCheckIncompleteWarning",
]


class HermesKernelError(Exception):
    """Base class of every error raised by pytest-hermes-kernel.

    :param message: what went wrong and, where it helps, a ``Hint:`` line.
    """

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message

    @property
    def facts(self) -> dict[str, Any]:
        """This error's facts by name (the keyword-only parameters of its ``__init__``)."""
        return {name: getattr(self, name) for name in fact_names(type(self))}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.facts))

    def __str__(self) -> str:
        return self.message


@functools.cache
def fact_names(cls: type[HermesKernelError]) -> tuple[str, ...]:
    """The names of the facts an error class carries (its ``__init__``'s keyword-only parameters)."""
    parameters = inspect.signature(cls.__init__).parameters.values()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


def _rebuild(cls: type[HermesKernelError], message: str, facts: dict[str, Any]) -> HermesKernelError:
    return cls(message, **facts)


class ConfigError(HermesKernelError, ValueError):
    """A bad option, marker argument or setting; the message names it and the accepted values."""


class ProtocolError(HermesKernelError):
    """A malformed or unexpected frame on a channel; the channel is closed after this."""


class FrameTooLargeError(HermesKernelError, ValueError):
    """A request (a cell's source, a tool's result) would not fit in one frame; nothing was
    sent and the kernel is untouched (the channel stays open)."""


class KernelStartError(HermesKernelError):
    """The kernel runner did not start or did not say hello before its deadline.

    :param kernel_id: the kernel that did not start (``None`` when it had no id yet).
    :param exit_code: the runner's exit status when it died before its hello (``None``: it did
        not die, or the transport could not tell).
    """

    def __init__(self, message: str = "", *, kernel_id: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.kernel_id = kernel_id
        self.exit_code = exit_code


class KernelServerUnavailable(KernelStartError):
    """A kernel server could not fork this kernel (gone, refused, silent); the transport falls back
    to a plain spawn and says so in the first result's ``kernel.note``.

    :param kernel_id: as for :class:`KernelStartError`.
    :param exit_code: as for :class:`KernelStartError`.
    :param sent: the request may have reached the server (``False``: it never went out; ask a new server).
    """

    def __init__(self, message: str = "", *, kernel_id: str | None = None, exit_code: int | None = None,
                 sent: bool = True) -> None:
        super().__init__(message, kernel_id=kernel_id, exit_code=exit_code)
        self.sent = sent


class KernelDiedError(HermesKernelError):
    """The kernel is gone and ``auto_restart`` is off; ``info`` says why (reason, exit code, signal).

    :param info: the lost kernel's ``KernelInfo`` (kernel.results), ``state_lost=True`` with
        its ``reason``; ``None`` where nothing was known.
    :param kernel_id: the lost kernel's id; defaults to ``info.kernel_id``.
    """

    def __init__(self, message: str = "", *, info: Any = None, kernel_id: str | None = None) -> None:
        super().__init__(message)
        self.info = info
        self.kernel_id = kernel_id if kernel_id is not None else getattr(info, "kernel_id", None)


class HostGoneError(KernelDiedError):
    """The host harness process is gone (it was SIGKILLed); its kernel went with it.

    :param info: as for :class:`KernelDiedError`.
    :param kernel_id: the harness's kernel (``None`` if the host died before it started one).
    :param host_pid: pid of the harness host process that is gone.
    """

    def __init__(self, message: str = "", *, info: Any = None, kernel_id: str | None = None,
                 host_pid: int | None = None) -> None:
        super().__init__(message, info=info, kernel_id=kernel_id)
        self.host_pid = host_pid


class KernelForkedError(HermesKernelError):
    """A kernel handle was used in a forked child of the process it belongs to (B42).

    The child shares the parent's channel and connections; using them would mix its frames into the
    parent's, and ending them would end the parent's kernel. So a child's ``execute``, ``start``,
    ``interrupt``, ``restart`` and ``keep`` raise this, and its ``shutdown`` leaves the kernel alone.

    :param kernel_id: the kernel.
    :param host_pid: the process the kernel belongs to (the child's is ``os.getpid()``).
    """

    def __init__(self, message: str = "", *, kernel_id: str | None = None, host_pid: int | None = None) -> None:
        super().__init__(message)
        self.kernel_id = kernel_id
        self.host_pid = host_pid


class KernelInUseError(HermesKernelError):
    """A kernel kept for post-mortem is held by another ``hermes-kernel`` command (``attach``,
    ``exec``): a runner has one client link, and a second attach would take it from the first.

    :param kernel_id: the kept kernel.
    :param host_pid: the pid of the command that holds it (``None``: not known).
    """

    def __init__(self, message: str = "", *, kernel_id: str | None = None, host_pid: int | None = None) -> None:
        super().__init__(message)
        self.kernel_id = kernel_id
        self.host_pid = host_pid


class KernelShutdownError(HermesKernelError):
    """The kernel (or its registry) was shut down; no further cells can run on it.

    :param kernel_id: the kernel that is shut down (``None``: the whole registry is).
    :param generation: the kernel's generation the refused request was sent to (``None``: not
        known, or the whole registry).
    """

    def __init__(self, message: str = "", *, kernel_id: str | None = None, generation: int | None = None) -> None:
        super().__init__(message)
        self.kernel_id = kernel_id
        self.generation = generation


class ChannelHeldHereError(HermesKernelError):
    """A call on a kernel was made inside the same thread's own use of that kernel's channel: a signal handler
    (or a listener) ran while the thread waited in a cell (``execute()``), a ``start()``, ``restart()`` or
    ``shutdown()`` of that kernel. The frame below holds the channel and will read what arrives on it, so the
    call cannot use it without waiting for itself or cutting into its frames; nothing was done.
    ``interrupt()`` and ``shutdown()`` are safe there (a nested ``shutdown()`` kills the runner at once).

    :param kernel_id: the kernel.
    :param held_by: what the frame below is doing with the channel (``"execute()"``, ``"restart()"``, ...).
    """

    def __init__(self, message: str = "", *, kernel_id: str | None = None, held_by: str | None = None) -> None:
        super().__init__(message)
        self.kernel_id = kernel_id
        self.held_by = held_by


class TransportLostError(HermesKernelError, ConnectionError):
    """The channel to a remote kernel runner broke and could not be re-attached in time.

    :param permanent: retrying cannot help (the container stopped, the runner is gone, a host key mismatch),
        so the handle reports the loss at once instead of re-attaching.
    :param timed_out: the host did not answer within the connect timeout (a silent host, not a refusal).
    """

    def __init__(self, message: str = "", *, permanent: bool = False, timed_out: bool = False) -> None:
        super().__init__(message)
        self.permanent = permanent
        self.timed_out = timed_out


#: The hint of every error a closed transport raises when asked to start a kernel.
CLOSED_TRANSPORT_HINT = ("Hint: start the kernel on an open transport (get_transport() makes a new shared one after "
                         "close_shared_transports())")


class ContainerGoneError(TransportLostError):
    """A closed transport was asked to reach its host, and the container it ran in is gone: every
    process it ran ended with it (so a kill asked of it is done). Raised instead of starting a
    new container, which nothing would remove.

    :param permanent: as for :class:`TransportLostError` (always true here).
    :param timed_out: as for :class:`TransportLostError`.
    """


class ExecNotStartedError(TransportLostError):
    """A remote command could not be started: its exec channel did not open because the
    connection under it was found dead. The command never ran, so running it again on a new
    connection is safe (the probes do, once).

    :param permanent: as for :class:`TransportLostError`.
    :param timed_out: as for :class:`TransportLostError`.
    """


class ChannelClosed(TransportLostError):
    """A channel's byte stream ended (EOF or error).

    :param permanent: as for :class:`TransportLostError`.
    :param timed_out: as for :class:`TransportLostError`.
    :param closed_by_us: this side closed the channel (``False``: the peer broke it, not "closed by us").
    """

    def __init__(self, message: str = "", *, permanent: bool = False, timed_out: bool = False,
                 closed_by_us: bool = False) -> None:
        super().__init__(message, permanent=permanent, timed_out=timed_out)
        self.closed_by_us = closed_by_us


class ExitStatusUnknownError(TransportLostError):
    """An execute-only backend returned no exit status a command can be judged by (handed case B35).

    ``None`` (docker-py's ``exit_code`` when the stream broke or the exec still ran), a negative
    number (paramiko's ``-1`` for "no status", subprocess's ``-N``) or one over 255: the command
    may or may not have run, so it is neither a success nor an ordinary failure.

    :param returned: ``repr`` of what the backend returned as the exit status.
    """

    def __init__(self, message: str = "", *, permanent: bool = False, timed_out: bool = False,
                 returned: str = "") -> None:
        super().__init__(message, permanent=permanent, timed_out=timed_out)
        self.returned = returned


class TransportUnavailableError(HermesKernelError):
    """A transport cannot run on this machine; the message says why and what to do."""


class ImageBuildError(HermesKernelError):
    """The kernel host image could not be built; the message carries the log tail and a hint.

    :param log_tail: the last lines of the build's output (``""`` when nothing ran).
    """

    def __init__(self, message: str = "", *, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


class ContainerStartError(HermesKernelError):
    """A kernel host or sshd container did not come up; the message has its log tail and a hint.

    :param container_id: the container that failed (``None`` when none was created).
    :param log_tail: its last log lines (``""`` when there was no container).
    """

    def __init__(self, message: str = "", *, container_id: str | None = None, log_tail: str = "") -> None:
        super().__init__(message)
        self.container_id = container_id
        self.log_tail = log_tail


class ImageMissingError(ContainerStartError):
    """The image a container is to run is not on the docker engine, and was not pulled or copied
    there; the message names the image and the engine, and says how to build, name or check it.

    :param image: the image name as it was given (``name:tag``, ``registry:port/name:tag``).
    :param container_id: always ``None`` (no container was created); kept from the base class.
    :param log_tail: always ``""``; kept from the base class.
    """

    def __init__(self, message: str = "", *, image: str = "", container_id: str | None = None,
                 log_tail: str = "") -> None:
        super().__init__(message, container_id=container_id, log_tail=log_tail)
        self.image = image


class SharedLockTimeout(HermesKernelError, TimeoutError):
    """Another process held a run's lock file (containers.sharing) for too long.

    :param path: the lock file.
    :param timeout: seconds this process waited for it.
    """

    def __init__(self, message: str = "", *, path: str | None = None, timeout: float | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.timeout = timeout


class UnsafeRunDirError(HermesKernelError, PermissionError):
    """A private directory of the kit cannot be trusted, so nothing is written there: a run's directory
    (``containers/rundir.py``), or the kernel root on the far side (ssh's ``~/.hermes-kernels``, filecell's ``root``) (B46).

    :param path: the directory refused.
    :param problem: why: a symlink, not a directory, owned by another user, open to group or
        others, or in a temp dir others can rename entries of.
    """

    def __init__(self, message: str = "", *, path: str | None = None, problem: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.problem = problem


class FileTransferError(HermesKernelError):
    """A file transfer in or out of a kernel (``KernelHandle.upload`` / ``download``) failed:
    the path does not exist, the destination exists, or the transport cannot move files.
    Nothing was written outside a temp dir that was removed.

    :param path: the offending entry (a kernel path relative to the kernel's working dir, or a
        local path).
    :param problem: what is wrong with it.
    """

    def __init__(self, message: str = "", *, path: str | None = None, problem: str = "") -> None:
        super().__init__(message)
        self.path = path
        self.problem = problem


class UnsafePathError(FileTransferError, PermissionError):
    """A transfer would leave the kernel's working dir or its local destination (B45): an
    absolute name, a ``..`` or empty component, a symlink on the path (never followed)."""


class TransferTooLargeError(FileTransferError):
    """A transfer is over its size bound (``KernelOptions.max_transfer_bytes`` or ``max_bytes=``).

    :param size_bytes: bytes the transfer would have moved up to and with ``path``.
    :param limit_bytes: the bound.
    """

    def __init__(self, message: str = "", *, path: str | None = None, problem: str = "",
                 size_bytes: int = 0, limit_bytes: int = 0) -> None:
        super().__init__(message, path=path, problem=problem)
        self.size_bytes = size_bytes
        self.limit_bytes = limit_bytes


class CellTimeoutError(HermesKernelError, TimeoutError):
    """Base of the watchdog outcomes, raised by ``execute(..., raise_on_timeout=True)``.

    :param result: the cell's ``CellResult`` (kernel.results): ``status="timeout"`` and the
        ``watchdog`` outcome; ``result.kernel`` says whether the state was lost.
    """

    def __init__(self, message: str = "", *, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class CellInterrupted(CellTimeoutError):
    """Over budget; SIGINT ended the cell and the namespace is kept (``result`` as above)."""


class KernelResetAfterTimeout(CellTimeoutError):
    """Over budget; the interrupt was ineffective, the kernel was killed and restarted (state lost)."""


class KernelResetFailed(CellTimeoutError):
    """Over budget; the kernel was killed but not replaced: its replacement failed to start, or
    ``WatchdogPolicy.restart`` is off."""


class KernelAbandoned(CellTimeoutError):
    """Over budget and the kernel could not be reached: not reset, the work may still be running."""


class ToolCallRefused(HermesKernelError, PermissionError):
    """A tool call was refused: no active cell, unknown tool, or the per-cell budget is spent."""


class LeakError(HermesKernelError):
    """Something outlived its test (raised only when the leak check is set to ``error``).

    :param leaks: how many of each kind of resource outlived the test (``{"kernel dir": 1}``).
    """

    def __init__(self, message: str = "", *, leaks: dict[str, int] | None = None) -> None:
        super().__init__(message)
        self.leaks = dict(leaks or {})


class ScenarioFailure(HermesKernelError, AssertionError):
    """A catalog scenario's step differed from its expectation; the message shows both.

    An ``AssertionError``, so that pytest reports the scenario as failed, not errored.
    """


class KernelStateError(HermesKernelError):
    """An illegal kernel state transition (a bug in the package, not in the caller's code).

    :param from_state: the name of the :class:`~.kernel.lifecycle.KernelState` it was in.
    :param to_state: the name of the state the move asked for.
    """

    def __init__(self, message: str = "", *, from_state: str | None = None, to_state: str | None = None) -> None:
        super().__init__(message)
        self.from_state = from_state
        self.to_state = to_state


class HermesLeakWarning(UserWarning):
    """A leak found after a test: a kernel, process, container, thread, fd or dir that outlived it."""


class HermesLeakCheckIncompleteWarning(UserWarning):
    """A test's leak check could not look at everything (a probe raised, a transport's host did
    not answer): what it names went unchecked, so a leak there was not seen. Not a leak itself;
    ``-W error::pytest_hermes_kernel.errors.HermesLeakCheckIncompleteWarning`` makes it fail the test."""
