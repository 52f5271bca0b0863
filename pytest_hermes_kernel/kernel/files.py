"""Files in and out of a kernel: the rules every transport shares, the report, and the port.

A transfer names a path under the kernel's **working dir** (``KernelOptions.cwd``, else the
kernel's own kernel dir: where cells run) and a local path. The rules (handed case B45):

* a kernel path is relative, made of plain names: no absolute path, no ``..``, ``.`` or empty
  component, no NUL (:func:`kernel_parts`, :class:`~pytest_hermes_kernel.errors.UnsafePathError`);
* a symlink on the kernel path is never followed: the transfer is refused, naming it;
* inside a tree only directories and regular files with one name are copied; symlinks, hard
  links (a file with more than one name), FIFOs, sockets and devices are **rejected**: not
  copied, listed in :attr:`TransferReport.rejected` with the reason; so is an entry whose name
  is not a plain name (a ``..`` an SFTP server or a tar sent);
* modes keep their permission bits less group/other write; setuid, setgid and sticky bits are
  stripped (:attr:`TransferReport.stripped`) (tarfile's ``data`` filter, PEP 706);
* sizes are bounded (``KernelOptions.max_transfer_bytes``, 256 MiB by default): over the bound
  is :class:`~pytest_hermes_kernel.errors.TransferTooLargeError` naming the entry, and nothing
  is left outside a temp dir that is removed.

:class:`KernelFiles` is the port: what a transport does for one kernel (list a tree, fetch
file contents, write a tree under a temp name and rename it into place). The transport-neutral
steps around it are in :mod:`.transfer`.
"""

from __future__ import annotations

import os
import stat
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from ..errors import FileTransferError, TransferTooLargeError, UnsafePathError

__all__ = ["Entry", "EntryKind", "KernelFiles", "Plan", "RejectedEntry", "TransferReport", "host_name", "kernel_name",
           "kernel_parts", "name_problem", "plan_tree", "safe_mode", "shown_path", "too_large"]

EntryKind = Literal["file", "dir", "symlink", "fifo", "socket", "device", "other"]
Direction = Literal["upload", "download"]
#: Mode bits that never survive a transfer.
SPECIAL_BITS = stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX
_WHAT = {"symlink": "a symlink: never followed, not copied", "fifo": "a FIFO: not copied",
         "socket": "a socket: not copied", "device": "a device file: not copied", "other": "not a regular file"}


@dataclass(frozen=True)
class RejectedEntry:
    """An entry a transfer did not copy.

    :param path: the entry (kernel side: relative to the working dir; local side: as given).
    :param reason: why (``"a symlink: never followed, not copied"``, ``"a hard link (2 names)..."``).
    """

    path: str
    reason: str


@dataclass(frozen=True)
class TransferReport:
    """What one upload or download did.

    :param direction: ``upload`` or ``download``.
    :param source: what was copied (kernel path or local path).
    :param destination: where it went.
    :param files: regular files written.
    :param dirs: directories made (the top one included).
    :param bytes: bytes of file content written.
    :param rejected: entries not copied, with the reason each.
    :param stripped: entries copied without their setuid, setgid or sticky bit.
    """

    direction: Direction
    source: str
    destination: str
    files: int
    dirs: int
    bytes: int
    rejected: tuple[RejectedEntry, ...] = ()
    stripped: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        """Every entry was copied (nothing rejected)."""
        return not self.rejected


@dataclass(frozen=True)
class Entry:
    """One entry of a tree, as listed where it lives (``lstat``: links are not followed).

    :param parts: names below the top of the transfer (``()``: the top itself).
    :param kind: what it is.
    :param size: bytes (regular files).
    :param mode: ``st_mode``.
    :param nlink: its number of names; ``None`` where the lister cannot tell.
    """

    parts: tuple[str, ...]
    kind: EntryKind
    size: int = 0
    mode: int = 0
    nlink: int | None = 1


@dataclass(frozen=True)
class Plan:
    """What a transfer copies, decided from a listing before anything is written.

    :param top: the top entry (a ``file`` or a ``dir``).
    :param entries: entries to copy, parents before children (the top first).
    :param rejected: entries not copied, with the reason each.
    :param stripped: shown paths of entries whose special mode bits are dropped.
    :param total_bytes: bytes of the files to copy.
    """

    top: Entry
    entries: tuple[Entry, ...]
    rejected: tuple[RejectedEntry, ...]
    stripped: tuple[str, ...]
    total_bytes: int

    @property
    def files(self) -> tuple[Entry, ...]:
        """The regular files to copy."""
        return tuple(e for e in self.entries if e.kind == "file")


def host_name(name: str) -> str:
    """A name of a transfer (UTF-8, an undecodable byte as ``surrogateescape``) as this host's
    ``os`` functions take it: the same bytes whatever the host's file system encoding (ASCII under
    ``LC_ALL=C`` with ``PYTHONUTF8=0``, where ``u-umlaut`` has no encoding but its two bytes as
    ``surrogateescape`` have). The identity on a UTF-8 host, and on a name this host listed."""
    return os.fsdecode(name.encode("utf-8", "surrogateescape"))


def kernel_name(name: str) -> str:
    """A name this host's ``os`` functions gave, as a transfer names it (:func:`host_name`'s inverse)."""
    return os.fsencode(name).decode("utf-8", "surrogateescape")


def name_problem(name: object) -> str | None:
    """Why ``name`` is not one plain file name (``None`` when it is)."""
    if not isinstance(name, str) or name in ("", ".", ".."):
        return f"{name!r} is not a plain name"
    if "/" in name or "\0" in name:
        return f"{name!r} holds '/' or NUL"
    try:
        name.encode("utf-8", "surrogateescape")  # U+DC80..U+DCFF: an undecodable byte of a file name
    except UnicodeEncodeError as exc:
        return f"{name!r} holds {name[exc.start]!r}, a lone surrogate that stands for no byte"
    return None


def kernel_parts(kernel_path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The names of a kernel path, a str or a path object (one trailing ``/`` allowed).

    :raises TypeError: if it is neither (bytes included: a name's undecodable byte is ``os.fsdecode``-d).
    :raises UnsafePathError: if it is absolute, empty, or has a ``..``, ``.`` or empty component.
    """
    if isinstance(kernel_path, os.PathLike):
        kernel_path = os.fspath(kernel_path)
    if not isinstance(kernel_path, str):
        raise TypeError(f"kernel_path must be a str or a path object (a path relative to the kernel's working dir), "
                        f"not {type(kernel_path).__name__}: {kernel_path!r}")
    if not kernel_path or kernel_path.startswith("/"):
        raise UnsafePathError(f"kernel path {kernel_path!r}: only a relative path under the kernel's working dir "
                              "is allowed", path=str(kernel_path), problem="not a relative path")
    parts = tuple(kernel_path[:-1].split("/") if kernel_path.endswith("/") else kernel_path.split("/"))
    for part in parts:
        if (problem := name_problem(part)) is not None:
            raise UnsafePathError(f"kernel path {kernel_path!r}: {problem} (no '..', '.' or empty components: "
                                  "a transfer stays under the kernel's working dir)", path=kernel_path, problem=problem)
    return parts


def safe_mode(kind: EntryKind, mode: int) -> int:
    """The mode a copied entry gets: permission bits less group/other write and the special
    bits, with the owner's read/write (and search, for a directory) kept."""
    return (mode & 0o755) | (0o700 if kind == "dir" else 0o600)


def plan_tree(entries: Sequence[Entry], shown: str, limit_bytes: int) -> Plan:
    """Decide what a listing's transfer copies (the rules in the module docstring).

    :param entries: the listing, the top first, parents before children.
    :param shown: the top's path as the user named it (errors and the report join names to it).
    :param limit_bytes: the size bound.
    :raises FileTransferError: if the top is neither a regular file nor a directory.
    :raises UnsafePathError: if the top is a hard link.
    :raises TransferTooLargeError: if the files add up to more than ``limit_bytes``; names the
        entry that crossed it.
    """
    top = entries[0]
    _check_top(top, shown)
    keep: list[Entry] = []
    rejected: list[RejectedEntry] = []
    stripped: list[str] = []
    total = 0
    for entry in entries:
        path = shown_path(shown, entry.parts)
        reason = _rejection(entry)
        if reason is not None:
            rejected.append(RejectedEntry(path, reason))
            continue
        if entry.kind == "file":
            total += entry.size
            if total > limit_bytes:
                raise too_large(path, total, limit_bytes)
        if entry.mode & SPECIAL_BITS:
            stripped.append(path)
        keep.append(entry)
    return Plan(top=top, entries=tuple(keep), rejected=tuple(rejected), stripped=tuple(stripped), total_bytes=total)


def _check_top(top: Entry, shown: str) -> None:
    if top.kind not in ("file", "dir"):
        raise FileTransferError(f"{shown} is {_WHAT.get(top.kind, top.kind)}: only regular files and directories "
                                "are transferred", path=shown, problem=f"a {top.kind}")
    if top.kind == "file" and (top.nlink or 1) > 1:
        raise UnsafePathError(f"{shown} is a hard link ({top.nlink} names): not transferred", path=shown,
                              problem=f"a hard link ({top.nlink} names)")


def _rejection(entry: Entry) -> str | None:
    for part in entry.parts:
        if (problem := name_problem(part)) is not None:
            return f"its name {problem}: not copied"
    if entry.kind == "dir":
        return None
    if entry.kind == "file":
        if (entry.nlink or 1) > 1:
            return f"a hard link ({entry.nlink} names): not copied"
        return None
    return _WHAT.get(entry.kind, "not a regular file")


def shown_path(shown: str, parts: Sequence[str]) -> str:
    """``parts`` joined under the user's ``shown`` top path (for errors and reports)."""
    return "/".join([shown.rstrip("/") or shown, *parts]) if parts else shown


def too_large(path: str, total: int, limit: int) -> TransferTooLargeError:
    """The error of a transfer that moved more than ``limit`` bytes by the time it reached ``path``."""
    return TransferTooLargeError(f"{path}: the transfer is {total} bytes with it, over its bound of {limit} bytes "
                                 "(max_bytes= or KernelOptions.max_transfer_bytes); nothing was written",
                                 path=path, problem="over the size bound", size_bytes=total, limit_bytes=limit)


class Sink(Protocol):
    """Where a download's file contents go (the host's staging dir, :class:`~.transfer.Staging`)."""

    def write(self, entry: Entry, chunks: Iterable[bytes]) -> None:
        """Write ``entry``'s content; raises :class:`TransferTooLargeError` over the bound."""

    def reject(self, path: str, reason: str) -> None:
        """Record an entry (its shown path) the transport found unsafe while fetching (not written)."""

    def discard(self, entry: Entry, path: str, reason: str) -> None:
        """Remove ``entry``, written, that the transport then learned was not whole; record it rejected."""


class Source(Protocol):
    """Where an upload's file contents come from (the host's files, :class:`~.transfer.LocalSource`)."""

    def chunks(self, entry: Entry, chunk_bytes: int) -> Iterator[bytes]:
        """``entry``'s content; raises :class:`TransferTooLargeError` over the bound."""


class KernelFiles(ABC):
    """A kernel's files as one transport reaches them; every path is names under :attr:`workdir`.

    Who calls what: :func:`~.transfer.download` calls :meth:`list_tree` then :meth:`fetch`;
    :func:`~.transfer.upload` calls :meth:`prepare`, :meth:`write_tree` (under a temp name
    beside the destination), then :meth:`commit`, or :meth:`abort` if anything failed.

    :param workdir: the kernel's working dir where the kernel runs.
    """

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir
        #: The missing parents :meth:`prepare` made (parts, the top first): :meth:`abort` removes them.
        self.made: list[tuple[str, ...]] = []

    def __enter__(self) -> KernelFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release what the transfer held (an SFTP session); the default holds nothing."""

    @abstractmethod
    def list_tree(self, parts: tuple[str, ...]) -> list[Entry]:
        """``parts`` and everything below it (``lstat``, parents first, never through a symlink).

        :raises FileTransferError: if it does not exist; :class:`UnsafePathError` if a component
            or the top is a symlink.
        """

    @abstractmethod
    def fetch(self, parts: tuple[str, ...], plan: Plan, sink: Sink) -> None:
        """Write the content of every file of ``plan`` to ``sink``."""

    @abstractmethod
    def prepare(self, parts: tuple[str, ...], kind: EntryKind) -> None:
        """Make the parents of ``parts`` (listing those it made in :attr:`made`) and check the
        destination (absent, or a file a file replaces).

        :raises UnsafePathError: if a component is a symlink; :class:`FileTransferError` if the
            destination exists otherwise.
        """

    @abstractmethod
    def write_tree(self, parts: tuple[str, ...], temp: str, plan: Plan, source: Source) -> None:
        """Write ``plan``'s tree as ``temp``, a new name beside ``parts`` (modes: :func:`safe_mode`)."""

    @abstractmethod
    def commit(self, parts: tuple[str, ...], temp: str) -> None:
        """Rename ``temp`` to ``parts`` (a symlink there is replaced, never followed)."""

    @abstractmethod
    def abort(self, parts: tuple[str, ...], temp: str) -> None:
        """Remove ``temp`` and what is under it, and the parents in :attr:`made` while they are
        empty; never raises."""


def refusal(entry: str, problem: str, *, symlink: bool) -> FileTransferError:
    """The typed error of a refusal the kernel's side reported for ``entry``."""
    cls = UnsafePathError if symlink else FileTransferError
    text = problem if entry == "." else f"{entry} {problem}"  # "." is the working dir, which the problem names
    return cls(text, path=entry, problem=problem)
