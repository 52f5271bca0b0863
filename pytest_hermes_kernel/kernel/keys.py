"""KernelKey: what names a kernel in a :class:`~.registry.KernelRegistry` (one kernel per key); the
check of a kernel's own id."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError

__all__ = ["CHILD_SEPARATOR", "KernelKey", "checked_key", "checked_kernel_id", "checked_pinned"]

CHILD_SEPARATOR = "::child::"
"""Between a parent owner and a delegated child's id in the child's owner key."""


@dataclass(frozen=True)
class KernelKey:
    """Identifies a kernel: one kernel per key.

    ``owner`` is the conversation or session; a delegated child owns ``"<owner>::child::<id>"``
    (see :meth:`child`). ``transport`` names where the kernel runs; ``None`` (the default) is
    the registry's own transport (:meth:`KernelRegistry.resolve`), so a suite run as a transport
    matrix puts ``KernelKey(owner=...)`` on each leg's transport. ``tools`` names the tool set,
    so kernels with different tools differ.
    """

    owner: str
    transport: str | None = None
    python: str | None = None
    cwd: str | None = None
    tools: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """A list of ``tools`` is kept as a tuple.

        :raises ConfigError: if ``owner`` is not a non-empty str, ``transport``, ``python`` or ``cwd``
            is neither a str nor ``None``, or ``tools`` is no list or tuple of str (a list raised a bare
            ``TypeError: unhashable type`` at the key's first cell; a str was taken as its letters)."""
        if not isinstance(self.owner, str) or not self.owner:
            raise ConfigError(f"KernelKey owner must be a non-empty str, got {self.owner!r}")
        for name in ("transport", "python", "cwd"):
            if not isinstance(getattr(self, name), (str, type(None))):
                raise ConfigError(f"KernelKey {name} must be a str or None, got {getattr(self, name)!r}")
        if not isinstance(self.tools, (list, tuple)) or not all(isinstance(t, str) for t in self.tools):
            raise ConfigError(f"KernelKey tools must be a list or tuple of tool names, e.g. tools=('lookup',), "
                              f"got {self.tools!r}")
        object.__setattr__(self, "tools", tuple(self.tools))  # (frozen: hashed as the key)

    @classmethod
    def child(cls, parent_owner: str, child_id: str, **rest: Any) -> KernelKey:
        """The key of a delegated child's kernel (pinned while the child lives)."""
        return cls(owner=f"{parent_owner}{CHILD_SEPARATOR}{child_id}", **rest)

    @property
    def child_id(self) -> str | None:
        """The delegated child's id (see :meth:`child`); ``None`` for a key that is no child's."""
        return self.owner.split(CHILD_SEPARATOR, 1)[1] if CHILD_SEPARATOR in self.owner else None


def checked_key(key: object) -> KernelKey:
    """``key``, when it is a :class:`KernelKey`.

    :raises TypeError: if it is not (a bare owner string, say), showing the right form.
    """
    if not isinstance(key, KernelKey):
        raise TypeError(f"a kernel's key must be a KernelKey, e.g. KernelKey(owner={key!r}); got {type(key).__name__}")
    return key


_KERNEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,127}")


def checked_kernel_id(kernel_id: str) -> str:
    """A kernel id names the kernel's dir and files where it runs, so it is one plain name (B45).

    :raises ConfigError: if it is not 1-128 letters, digits, ``_`` or ``-`` (no ``/``, no ``..``).
    """
    if not isinstance(kernel_id, str) or not _KERNEL_ID.fullmatch(kernel_id):
        raise ConfigError(f"a kernel id must be 1-128 letters, digits, '_' or '-' (it names the kernel's dir), "
                          f"not {kernel_id!r}")
    return kernel_id


def checked_pinned(key: KernelKey, pinned: object) -> bool:
    """``pinned`` as given, or for ``None`` whether ``key`` is a delegated child's (pinned while it lives).

    :raises TypeError: if it is neither a bool nor ``None`` (``pinned="no"`` pinned the kernel: a true str).
    """
    if pinned is None:
        return key.child_id is not None
    if not isinstance(pinned, bool):
        raise TypeError(f"pinned must be True, False or None, not {type(pinned).__name__} {pinned!r}; nothing was started")
    return pinned
