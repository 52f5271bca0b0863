"""One exception hierarchy for the whole package.

Every exception here pickles (pytest-xdist ships them between processes): each class keeps
its constructor arguments in ``self.args`` and rebuilds from them in ``__reduce__``.
Builtins are mixed in only where callers catch them (``TimeoutError``, ``ConnectionError``,
``LookupError``, ``ValueError``).
"""

from __future__ import annotations

from typing import Any


class HermesKernelError(Exception):
    """Base class of every error raised by pytest-hermes-kernel."""

    def __init__(self, message: str = "", **facts: Any) -> None:
        super().__init__(message)
        self.message = message
        self.facts = dict(facts)
        for name, value in facts.items():
            setattr(self, name, value)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self.message, self.facts))

    def __str__(self) -> str:
        return self.message


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
    """The kernel runner did not start or did not say hello before its deadline."""


class KernelServerUnavailable(KernelStartError):
    """A kernel server could not fork this kernel (gone, refused, silent); the transport falls back
    to a plain spawn and says so in the first result's ``kernel.note``."""


class KernelDiedError(HermesKernelError):
    """The kernel is gone; ``info`` (a :class:`KernelInfo`) says why (reason, exit code, signal)."""


class KernelRestartedError(KernelDiedError):
    """The kernel was replaced by a new generation and its state is lost (auto-restart off)."""


class KernelShutdownError(HermesKernelError):
    """The kernel (or its registry) was shut down; no further cells can run on it."""


class TransportLostError(HermesKernelError, ConnectionError):
    """The channel to a remote kernel runner broke and could not be re-attached in time."""


class TransportUnavailableError(HermesKernelError):
    """A transport cannot run on this machine; the message says why and what to do."""


class ImageBuildError(HermesKernelError):
    """The kernel host image could not be built; the message carries the log tail and a hint."""


class UnsafeRunDirError(HermesKernelError, PermissionError):
    """A run's private directory cannot be trusted, so no run file is written there.

    Facts: ``path`` (the directory refused) and ``problem`` (a symlink, not a directory, owned
    by another user, open to group or others, or in a temp dir others can rename entries of).
    """


class CellTimeoutError(HermesKernelError, TimeoutError):
    """Base of the watchdog outcomes, raised by ``execute(..., raise_on_timeout=True)``."""


class CellInterrupted(CellTimeoutError):
    """Over budget; SIGINT ended the cell and the namespace is kept."""


class KernelResetAfterTimeout(CellTimeoutError):
    """Over budget; the interrupt was ineffective, the kernel was killed and restarted (state lost)."""


class KernelResetFailed(CellTimeoutError):
    """Over budget; the kernel was killed but its replacement failed to start."""


class KernelAbandoned(CellTimeoutError):
    """Over budget and the kernel could not be reached: not reset, the work may still be running."""


class ToolCallRefused(HermesKernelError, PermissionError):
    """A tool call was refused: no active cell, unknown tool, or the per-cell budget is spent."""


class LeakError(HermesKernelError):
    """Something outlived its test (raised only when the leak check is set to ``error``)."""


class HermesLeakWarning(UserWarning):
    """A leak found after a test: a kernel, process, container, thread, fd or dir that outlived it."""


class KernelStateError(HermesKernelError):
    """An illegal kernel state transition (a bug in the package, not in the caller's code).

    ``from_state`` and ``to_state`` name the two :class:`~.kernel.lifecycle.KernelState` members.
    """
