"""The transport-neutral steps of a file transfer, and its host side.

:func:`download`: list the kernel's tree, plan it (:func:`~.files.plan_tree`: rejections and the
size bound, before anything moves), write it into a fresh temp dir beside the local destination
(:class:`Staging`), then rename it into place; on any error the temp dir is removed, so nothing
is left outside it. :func:`upload`: list the local tree the same way (its symlinks are not
followed either), check the kernel's destination, write the tree under a temp name beside it,
rename it into place; on any error the temp name is removed.

The local destination of a download (and the kernel destination of an upload) names what the
copied entry becomes: it must not exist, or be a regular file that a copied file replaces; its
missing parent directories are made (and removed again, while empty, if the transfer fails). A
failure is a :class:`~..errors.FileTransferError` naming the path (a local ``OSError``, the
transport's own errors), never a bare error naming a temp name.
"""

from __future__ import annotations

import errno
import os
import posixpath
import secrets
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ..errors import ConfigError, FileTransferError, UnsafePathError
from .files import (Entry, EntryKind, KernelFiles, Plan, RejectedEntry, TransferReport, host_name, kernel_name,
                    kernel_parts, plan_tree, safe_mode, too_large)
from .runner.trees import remove_tree

if TYPE_CHECKING:
    from .handle import KernelHandle

T = TypeVar("T")

__all__ = ["LocalSource", "Staging", "download", "download_from", "local_entries", "upload", "upload_to"]

#: Bytes read or written at a time.
CHUNK_BYTES = 1 << 20
#: Prefix of the temp name an upload writes before its rename (``transports/filetree.py`` uses it too).
TEMP_PREFIX = ".hermes-part-"
_NOFOLLOW_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def download(files: KernelFiles, kernel_path: str | os.PathLike[str], local_path: str | os.PathLike[str], *,
             max_bytes: int) -> TransferReport:
    """Copy ``kernel_path`` (under the kernel's working dir) to ``local_path``.

    :param max_bytes: the size bound in bytes.
    :raises UnsafePathError: if ``kernel_path`` is not a plain relative path or a symlink is on it.
    :raises FileTransferError: if it does not exist, or ``local_path`` is an existing directory.
    :raises TransferTooLargeError: if it is over ``max_bytes``; nothing is left behind.
    """
    parts = kernel_parts(kernel_path)
    try:
        listed = files.list_tree(parts)
    except RecursionError:  # a walk on the host (SFTP's): a named error, not the interpreter's traceback
        shown, why = "/".join(parts), "is nested too deeply to copy (about 1000 directories)"
        raise FileTransferError(f"{shown} {why}", path=shown, problem=why) from None
    plan = plan_tree(listed, "/".join(parts), max_bytes)
    _file_to_a_dir_name(plan, local_path, "/".join(parts))
    with Staging(Path(local_path), max_bytes, plan.top.kind) as staging:
        staging.make_dirs(plan)
        files.fetch(parts, plan, staging)
        staging.commit(plan)
    return TransferReport(direction="download", source="/".join(parts), destination=str(local_path),
                          files=staging.files, dirs=sum(e.kind == "dir" for e in plan.entries), bytes=staging.bytes,
                          rejected=plan.rejected + tuple(staging.rejected), stripped=plan.stripped)


def upload(files: KernelFiles, local_path: str | os.PathLike[str], kernel_path: str | os.PathLike[str], *,
           max_bytes: int) -> TransferReport:
    """Copy ``local_path`` to ``kernel_path`` (under the kernel's working dir).

    :param max_bytes: the size bound in bytes.
    :raises UnsafePathError: if ``kernel_path`` is not a plain relative path or a symlink is on it.
    :raises FileTransferError: if ``local_path`` does not exist or the destination exists (a
        directory, or anything but a file a file replaces).
    :raises TransferTooLargeError: if it is over ``max_bytes``; nothing is left behind.
    """
    parts = kernel_parts(kernel_path)
    root = Path(local_path)
    plan = plan_tree(local_entries(root), str(root), max_bytes)
    _file_to_a_dir_name(plan, kernel_path, str(root))
    files.prepare(parts, plan.top.kind)
    source = LocalSource(root, max_bytes)
    temp = TEMP_PREFIX + secrets.token_hex(8)
    try:
        files.write_tree(parts, temp, plan, source)
        files.commit(parts, temp)
    except BaseException as exc:
        files.abort(parts, temp)
        if isinstance(exc, FileTransferError):
            _name_the_destination(exc, "/".join((*parts[:-1], temp)), "/".join(parts))
        raise
    return TransferReport(direction="upload", source=str(root), destination="/".join(parts), files=len(plan.files),
                          dirs=sum(e.kind == "dir" for e in plan.entries), bytes=source.bytes,
                          rejected=plan.rejected, stripped=plan.stripped)


def _file_to_a_dir_name(plan: Plan, destination: str | os.PathLike[str], source: str) -> None:
    """Refuse a file copied to a destination written as a directory (``out/``): it named the
    file ``out`` (the destination names what the entry becomes, never a directory it goes into).

    :raises FileTransferError: naming the destination.
    """
    if plan.top.kind == "file" and isinstance(destination, str) and destination.endswith("/"):
        raise FileTransferError(f"{destination!r} ends in '/' but {source} is a file: the destination names what "
                                f"the file becomes, not a directory it goes into; name the file (e.g. "
                                f"{destination + posixpath.basename(source.rstrip('/'))!r})", path=destination,
                                problem="a directory name for a file")


def _name_the_destination(exc: FileTransferError, temp: str, destination: str) -> None:
    """Make ``exc`` name ``destination`` where it names ``temp``, the name an upload writes
    before its rename (the user never saw it, and it is gone once the upload is aborted)."""
    if exc.path is not None and (exc.path == temp or exc.path.startswith(temp + "/")):
        exc.path = destination + exc.path[len(temp):]
    exc.message = exc.message.replace(temp, destination)
    exc.args = tuple(a.replace(temp, destination) if isinstance(a, str) else a for a in exc.args)


def kind_of(mode: int) -> EntryKind:
    """The :data:`~.files.EntryKind` of an ``st_mode``."""
    for test, kind in ((stat.S_ISDIR, "dir"), (stat.S_ISREG, "file"), (stat.S_ISLNK, "symlink"),
                       (stat.S_ISFIFO, "fifo"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"),
                       (stat.S_ISBLK, "device")):
        if test(mode):
            return kind  # type: ignore[return-value]
    return "other"


def local_entries(root: Path) -> list[Entry]:
    """A local tree as :class:`~.files.Entry` values: ``root`` (as given) and, without following
    any symlink, everything below it.

    :raises FileTransferError: if ``root`` does not exist.
    """
    try:
        st = root.stat()
    except FileNotFoundError:
        raise FileTransferError(f"{root} does not exist", path=str(root), problem="does not exist") from None
    except OSError as exc:  # a parent it cannot search, a name too long, ...
        problem = exc.strerror or str(exc)
        raise FileTransferError(f"{root}: {problem}", path=str(root), problem=problem) from exc
    found = [Entry((), kind_of(st.st_mode), st.st_size, st.st_mode, st.st_nlink)]
    if stat.S_ISDIR(st.st_mode):
        found += _walk(root, ())
    return found


def _walk(path: Path, rel: tuple[str, ...]) -> list[Entry]:
    found: list[Entry] = []
    with _local(lambda: os.scandir(path), path) as it:  # an unreadable directory: named
        children = sorted(it, key=lambda e: e.name)
    for child in children:
        st = _local(lambda: child.stat(follow_symlinks=False), path / child.name)
        entry = Entry((*rel, kernel_name(child.name)), kind_of(st.st_mode), st.st_size, st.st_mode, st.st_nlink)
        found.append(entry)
        if entry.kind == "dir":
            found += _walk(path / child.name, entry.parts)
    return found


class LocalSource:
    """An upload's local files, read without following symlinks below the top, and counted.

    :param root: the local path being uploaded.
    :param limit_bytes: the size bound (a file that grew since its listing is stopped by it).
    """

    def __init__(self, root: Path, limit_bytes: int) -> None:
        self.root = root
        self.limit_bytes = limit_bytes
        self.bytes = 0

    def chunks(self, entry: Entry, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
        """``entry``'s content in chunks of up to ``chunk_bytes``.

        :raises UnsafePathError: if it is no longer a regular file with one name.
        :raises TransferTooLargeError: if the transfer passes its bound.
        """
        path = self.root.joinpath(*map(host_name, entry.parts))
        flags = _NOFOLLOW_READ if entry.parts else os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
        fd = _local(lambda: os.open(path, flags), path)  # gone or unreadable since the listing: named
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or (entry.parts and st.st_nlink != 1):
                raise UnsafePathError(f"{path} changed during the upload", path=str(path), problem="changed")
            while data := _local(lambda: os.read(fd, chunk_bytes), path):
                self.bytes += len(data)
                if self.bytes > self.limit_bytes:
                    raise too_large(str(path), self.bytes, self.limit_bytes)
                yield data
        finally:
            os.close(fd)


def _lstat_or_none(path: Path) -> os.stat_result | None:
    """``lstat(path)``, or ``None`` where there is nothing to see (a parent missing or a file: the
    staging dir's own error names that)."""
    try:
        return os.lstat(path)
    except OSError:
        return None


def _as_what(mode: int) -> str:
    """``, a fifo`` and the like for an entry that is no regular file nor directory; ``""`` else."""
    what = {stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket", stat.S_IFCHR: "device", stat.S_IFBLK: "device",
            stat.S_IFLNK: "symlink"}.get(stat.S_IFMT(mode))
    return f", a {what}," if what else ""


class Staging:
    """A download's local side: a fresh 0700 temp dir beside the destination, renamed into place
    by :meth:`commit` and removed in any case when the ``with`` block ends (with the missing
    parent directories it made, when nothing was committed).

    :param destination: what the downloaded entry becomes.
    :param limit_bytes: the size bound, counted on the bytes really written.
    :param kind: what is downloaded (``file`` or ``dir``): only a file replaces a file.
    :raises FileTransferError: if ``destination`` exists as anything but a regular file (a
        directory, symlink, FIFO, socket or device), or as one when a directory is downloaded, or
        its directory cannot be made or written (naming it).
    """

    def __init__(self, destination: Path, limit_bytes: int, kind: EntryKind = "file") -> None:
        found = _lstat_or_none(destination)
        if found is not None and (kind != "file" or not stat.S_ISREG(found.st_mode)):  # a FIFO, socket or device
            raise FileTransferError(  # was renamed over too: a root's download to /dev/null made it a regular file
                f"{destination} already exists{_as_what(found.st_mode)} (not as a file that a downloaded file "
                "replaces): a download names a new path", path=str(destination), problem="already exists")
        self.destination = destination
        self.limit_bytes = limit_bytes
        self.made = [p for p in (destination.parent, *destination.parent.parents) if not os.path.lexists(p)]
        self.committed = False
        self.dir = Path(_local(lambda: _make_staging_dir(destination.parent)))
        self.top = self.dir / "top"
        self.files = 0
        self.bytes = 0
        self.rejected: list[RejectedEntry] = []  # found while fetching

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc: object) -> None:
        remove_tree(str(self.dir))  # (a staged tree deeper than the recursion limit too: its error stays the one raised)
        for made in () if self.committed else self.made:  # deepest first: the parents this download made
            try:
                os.rmdir(made)
            except OSError:  # no longer empty (made by someone else meanwhile), or gone
                break

    def path(self, parts: tuple[str, ...]) -> Path:
        """Where the entry ``parts`` is written (its names were checked by the plan)."""
        return self.top.joinpath(*map(host_name, parts))

    def make_dirs(self, plan: Plan) -> None:
        """Make every directory of ``plan`` (private until :meth:`commit`)."""
        for entry in plan.entries:
            if entry.kind == "dir":
                _local(lambda: _private_dir(self.path(entry.parts)), self.destination.joinpath(*entry.parts))

    def write(self, entry: Entry, chunks: Iterable[bytes]) -> None:
        """Write ``entry``'s content into a new file (``O_EXCL``, never through a link).

        :raises TransferTooLargeError: if the bytes written pass the bound.
        """
        shown = self.destination.joinpath(*entry.parts)
        fd = _local(lambda: os.open(self.path(entry.parts), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                    | os.O_CLOEXEC, 0o600), shown)
        try:
            for data in chunks:
                self.bytes += len(data)
                if self.bytes > self.limit_bytes:
                    raise too_large("/".join(entry.parts) or str(self.destination), self.bytes, self.limit_bytes)
                view = memoryview(data)
                while view:
                    view = view[_local(lambda: os.write(fd, view), shown):]
        finally:
            os.close(fd)
            getattr(chunks, "close", lambda: None)()  # a generator's open file is closed now, not by a GC
        self.files += 1

    def reject(self, path: str, reason: str) -> None:
        """Record an entry found unsafe while fetching (nothing of it is written)."""
        self.rejected.append(RejectedEntry(path, reason))

    def discard(self, entry: Entry, path: str, reason: str) -> None:
        """Remove a file written here that was not whole after all (docker's archiver padded it); reject it."""
        os.unlink(self.path(entry.parts))
        self.files -= 1
        self.reject(path, reason)

    def commit(self, plan: Plan) -> None:
        """Give every entry its safe mode (directories last, deepest first) and rename the tree
        into place."""
        written = [e for e in plan.entries if e.kind == "dir" or self.path(e.parts).exists()]
        for entry in sorted(written, key=lambda e: (e.kind == "dir", -len(e.parts))):
            os.chmod(self.path(entry.parts), safe_mode(entry.kind, entry.mode))  # made here: no links
        if plan.top.kind == "file" and not os.path.lexists(self.top):  # its one file was rejected as it came
            shown, why = (self.rejected[0].path, self.rejected[0].reason) if self.rejected else ("the file", "not copied")
            raise FileTransferError(f"{shown}: {why}; nothing was written to {self.destination}", path=shown,
                                    problem=why)  # (it named the local path, "No such file or directory")
        if plan.top.kind == "file":
            _local(lambda: os.replace(self.top, self.destination))  # a file there is replaced
        else:
            _local(lambda: os.rename(self.top, self.destination))
        self.committed = True


def _make_staging_dir(parent: Path) -> str:
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # exist_ok, yet it exists: as something other than a directory
        raise NotADirectoryError(errno.ENOTDIR, "is not a directory", str(parent)) from None
    try:
        made = tempfile.mkdtemp(prefix=".hermes-download-", dir=parent)
    except OSError as exc:  # named the staging dir, a name the user never gave: the dir it could not go in
        raise OSError(exc.errno, exc.strerror, str(parent)) from None
    os.chmod(made, 0o700)  # mkdtemp's 0700 less the umask: 0500 under umask 0277, where nothing could be written
    return made


def _private_dir(path: Path) -> None:
    os.mkdir(path, 0o700)
    os.chmod(path, 0o700)  # whatever the umask: the files of the download are written into it


def _local(step: Callable[[], T], path: Path | None = None) -> T:
    """Run one step on the local side of a transfer; its ``OSError`` (a full disk, a read-only
    or missing directory, a parent that is a file, a file gone or unreadable) as a
    :class:`FileTransferError` naming the local path (``path``, else the one the error names),
    not the staging dir."""
    try:
        return step()
    except OSError as exc:
        shown = str(path or exc.filename2 or exc.filename or "")  # a rename's target is the user's path
        problem = exc.strerror or str(exc)
        raise FileTransferError(f"{shown}: {problem}", path=shown, problem=problem) from exc


def upload_to(handle: KernelHandle, local_path: str | os.PathLike[str], kernel_path: str | os.PathLike[str], *,
              max_bytes: int | None = None) -> TransferReport:
    """Copy a local file or directory tree to ``kernel_path`` under the kernel's working dir
    (``KernelOptions.cwd``, else its kernel dir), starting the kernel first if needed.

    The rules (no ``..``, no absolute names, no symlink followed, links and special files
    rejected, special mode bits stripped, a size bound) are in :mod:`.files`.

    :param local_path: the file or directory to copy (symlinks below it are not followed).
    :param kernel_path: what it becomes, relative to the working dir (a str or a path object);
        it must not exist (a file may replace a file); missing parent directories are made.
    :param max_bytes: the size bound in bytes; ``None``: ``KernelOptions.max_transfer_bytes``.
    :returns: what was copied and what was not.
    :raises UnsafePathError: if ``kernel_path`` is absolute, has ``..``, or has a symlink on it.
    :raises FileTransferError: if ``local_path`` does not exist, the destination exists, or the
        transport cannot move files.
    :raises TransferTooLargeError: if the files add up to more than the bound (nothing is left).
    :raises ConfigError: if ``max_bytes`` is not an int > 0.
    :raises TypeError: if ``kernel_path`` is neither a str nor a path object.
    """
    limit = _limit(handle, max_bytes)
    kernel_parts(kernel_path)  # a bad one is refused before the kernel is started for it
    with _kernel_files(handle, kernel_path) as files:
        return upload(files, local_path, kernel_path, max_bytes=limit)


def download_from(handle: KernelHandle, kernel_path: str | os.PathLike[str], local_path: str | os.PathLike[str], *,
                  max_bytes: int | None = None) -> TransferReport:
    """Copy a file or directory tree at ``kernel_path`` under the kernel's working dir to
    ``local_path``, starting the kernel first if needed (the rules: :mod:`.files`).

    :param kernel_path: relative to the working dir (a str or a path object).
    :param local_path: what it becomes: a new path, or a file a downloaded file replaces
        (missing parents are made); it is written in a temp dir beside it and renamed into place.
    :param max_bytes: the size bound in bytes; ``None``: ``KernelOptions.max_transfer_bytes``.
    :returns: what was copied and what was not.
    :raises UnsafePathError: if ``kernel_path`` is absolute, has ``..``, or has a symlink on it.
    :raises FileTransferError: if it does not exist, ``local_path`` is an existing directory, or
        the transport cannot move files.
    :raises TransferTooLargeError: if the files add up to more than the bound (nothing is left).
    :raises ConfigError: if ``max_bytes`` is not an int > 0.
    :raises TypeError: if ``kernel_path`` is neither a str nor a path object.
    """
    limit = _limit(handle, max_bytes)
    kernel_parts(kernel_path)  # a bad one is refused before the kernel is started for it
    with _kernel_files(handle, kernel_path) as files:
        return download(files, kernel_path, local_path, max_bytes=limit)


def _limit(handle: KernelHandle, max_bytes: int | None) -> int:
    if max_bytes is None:
        return handle.options.max_transfer_bytes
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes <= 0:
        raise ConfigError(f"max_bytes must be an int > 0 (bytes), or None; got {max_bytes!r}")
    return max_bytes


def _kernel_files(handle: KernelHandle, kernel_path: str | os.PathLike[str]) -> KernelFiles:
    """The started kernel's files under its working dir, from its transport.

    :raises FileTransferError: naming ``kernel_path``, if the kernel has no runner, its host
        cannot be reached (the transport's error chained), or its ``cwd=`` is still relative (a
        kernel not on this machine, which its launch refuses; a local one's was made absolute
        with its handle): a transfer would resolve it where the copy runs and miss the cells' files.
    """
    cwd = handle.options.cwd
    if cwd is not None and not posixpath.isabs(cwd):
        raise FileTransferError(f"{os.fspath(kernel_path)}: kernel {handle.kernel_id} has a relative cwd={cwd!r}, "
                                "on a host that is not this one: a transfer cannot tell where that is"
                                "\nHint: give the kernel an absolute cwd= (e.g. os.path.abspath(...))",
                                path=os.fspath(kernel_path), problem="a relative cwd")
    launched = handle.start().launched
    if launched is None or not (handle.options.cwd or launched.kernel_dir):
        raise FileTransferError(f"kernel {handle.kernel_id} has no runner now: no working dir to transfer to",
                                path=None, problem="no runner")
    # a cwd= is the host's choice, followed whole (its trailing slash): a symlink naming the dir
    # took no transfer ("the working dir ... is a symlink"), though the cells ran there; only the
    # kernel's own dir, which a cell may swap for a link, is opened without following one, and a
    # transport whose transfers read as root (docker's archives) drops the slash: not followed there
    workdir = f"{cwd.rstrip('/')}/" if cwd else launched.kernel_dir or ""
    try:
        return handle.transport.files(launched, workdir)
    except FileTransferError:
        raise
    except Exception as exc:  # the host cannot be reached (an ssh connection down, a container gone)
        shown = os.fspath(kernel_path)
        raise FileTransferError(f"{shown}: the files of kernel {handle.kernel_id} cannot be reached: "
                                f"{type(exc).__name__}: {exc}", path=shown, problem="cannot be reached") from exc
