"""An ssh kernel's files over SFTP, with the rules of :mod:`~pytest_hermes_kernel.kernel.files`.

Every component of a path is ``lstat``-ed before it is used (a symlink is refused, naming it);
a tree is listed with ``listdir_attr`` (``lstat`` attributes), and a name the server sends that
is not one plain name (``..``, ``a/b``, an absolute path: teamster#4570, NovaTerminal#104) is
rejected and never joined to a local path or descended into. SFTP v3 attributes carry no link
count: it is read from the listing's ``ls -l`` line (OpenSSH's ``longname``), and a file a server
lists without one counts as one name. A file is ``lstat``-ed again right before it is opened
and its open handle must be a regular file. SFTP has no ``O_NOFOLLOW``: a process of the kernel
that swaps a checked entry for a symlink in between (milliseconds) could make this read or write
another file the ssh user can reach on that host; it never makes it write outside the local
destination. Uploads go to a temp name beside the destination and are renamed into place with
``posix-rename@openssh.com``.
"""

from __future__ import annotations

import posixpath
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from ...errors import FileTransferError, UnsafePathError
from ...kernel.files import Entry, EntryKind, KernelFiles, Plan, Sink, Source, name_problem, safe_mode, shown_path
from ...kernel.transfer import kind_of

__all__ = ["SftpFiles", "link_count"]

CHUNK_BYTES = 1 << 20


class SftpClient(Protocol):
    """What :class:`SftpFiles` uses of ``paramiko.SFTPClient`` (a fake one in tests)."""

    def lstat(self, path: str) -> Any: ...

    def listdir_attr(self, path: str = ".") -> list[Any]: ...

    def open(self, filename: str, mode: str = "r", bufsize: int = -1) -> Any: ...

    def mkdir(self, path: str, mode: int = 0o777) -> None: ...

    def chmod(self, path: str, mode: int) -> None: ...

    def posix_rename(self, oldpath: str, newpath: str) -> None: ...

    def remove(self, path: str) -> None: ...

    def rmdir(self, path: str) -> None: ...

    def close(self) -> None: ...


def link_count(longname: str | None) -> int | None:
    """The link count in an ``ls -l`` style listing line (``-rw-r--r--  2 u g 5 ...``); ``None``
    if the line has none."""
    fields = (longname or "").split()
    if len(fields) >= 2 and len(fields[0]) >= 10 and fields[1].isdigit():
        return int(fields[1])
    return None


class SftpFiles(KernelFiles):
    """The files of one ssh kernel under its working dir, through one SFTP session.

    :param workdir: the working dir on the ssh host (absolute).
    :param sftp: the session (closed with this object).
    """

    def __init__(self, workdir: str, sftp: SftpClient) -> None:
        super().__init__(workdir)
        self.sftp = sftp

    def close(self) -> None:
        self.sftp.close()

    def path(self, parts: tuple[str, ...]) -> str:
        """The path on the ssh host.

        :raises FileTransferError: if it holds an undecodable byte (``\\udcff``): paramiko's SFTP
            sends UTF-8 names only (it raised a bare UnicodeEncodeError).
        """
        path = posixpath.join(self.workdir, *parts)
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise _not_utf8("/".join(parts)) from None
        return path

    def _lstat(self, parts: tuple[str, ...]) -> Any | None:
        try:
            return self.sftp.lstat(self.path(parts))
        except FileNotFoundError:
            return None

    def _walk_parents(self, parts: tuple[str, ...], *, create: bool) -> None:
        """Check (and with ``create`` make) every directory above ``parts``, and the working dir.

        :raises UnsafePathError: if one is a symlink; :class:`FileTransferError` if one is missing
            (without ``create``) or not a directory.
        """
        for i in range(len(parts)):
            prefix = parts[:i]
            st = self._lstat(prefix)
            if st is None and create and prefix:
                self.sftp.mkdir(self.path(prefix))
                self.made.append(prefix)
                st = self._lstat(prefix)
            _check_dir(st, "/".join(prefix) or ".", self.workdir)

    def list_tree(self, parts: tuple[str, ...]) -> list[Entry]:
        with _named("/".join(parts)):
            return self._list_tree(parts)

    def _list_tree(self, parts: tuple[str, ...]) -> list[Entry]:
        self._walk_parents(parts, create=False)
        st = self._lstat(parts)
        shown = "/".join(parts)
        if st is None:
            raise FileTransferError(f"{shown} does not exist", path=shown, problem="does not exist")
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePathError(f"{shown} is a symlink (never followed)", path=shown, problem="is a symlink")
        top = Entry((), kind_of(st.st_mode), st.st_size or 0, st.st_mode, None)
        return [top, *self._walk(parts, ())] if top.kind == "dir" else [top]

    def _walk(self, parts: tuple[str, ...], rel: tuple[str, ...]) -> Iterator[Entry]:
        try:
            with _named("/".join((*parts, *rel))):
                attrs = self.sftp.listdir_attr(self.path((*parts, *rel)))
        except UnicodeDecodeError:  # paramiko decodes every name of a listing as UTF-8
            raise _not_utf8("/".join((*parts, *rel)), listing=True) from None
        for attr in sorted(attrs, key=lambda a: str(a.filename)):
            entry = Entry((*rel, attr.filename), kind_of(attr.st_mode or 0), attr.st_size or 0, attr.st_mode or 0,
                          link_count(getattr(attr, "longname", None)))
            yield entry
            if entry.kind == "dir" and name_problem(attr.filename) is None:  # never into "..", "a/b"
                yield from self._walk(parts, entry.parts)

    def fetch(self, parts: tuple[str, ...], plan: Plan, sink: Sink) -> None:
        shown = "/".join(parts)
        for entry in plan.files:
            with _named(shown_path(shown, entry.parts)):
                self._fetch_one((*parts, *entry.parts), shown_path(shown, entry.parts), entry, sink)

    def _fetch_one(self, full: tuple[str, ...], shown: str, entry: Entry, sink: Sink) -> None:
        st = self._lstat(full)
        if st is None or not stat.S_ISREG(st.st_mode):
            sink.reject(shown, "changed during the copy (no longer a regular file)")
            return
        with self.sftp.open(self.path(full), "rb") as fh:
            if not stat.S_ISREG(fh.stat().st_mode):
                sink.reject(shown, "changed during the copy (not a regular file)")
                return
            sink.write(entry, iter(lambda: fh.read(CHUNK_BYTES), b""))

    def prepare(self, parts: tuple[str, ...], kind: EntryKind) -> None:
        with _named("/".join(parts)):
            self._walk_parents(parts, create=True)
            st = self._lstat(parts)
        if st is None or (kind == "file" and stat.S_ISREG(st.st_mode)):
            return
        shown = "/".join(parts)
        if stat.S_ISLNK(st.st_mode):
            raise UnsafePathError(f"{shown} already exists, as a symlink (never followed)", path=shown,
                                  problem="is a symlink")
        raise FileTransferError(f"{shown} already exists, as a {kind_of(st.st_mode)}", path=shown,
                                problem="already exists")

    def write_tree(self, parts: tuple[str, ...], temp: str, plan: Plan, source: Source) -> None:
        base = (*parts[:-1], temp)
        for entry in plan.entries:
            target = self.path((*base, *entry.parts))
            shown = "/".join((*base, *entry.parts))  # the upload names its destination instead
            with _named(shown):
                if entry.kind == "dir":
                    self.sftp.mkdir(target, 0o700)
                else:
                    sent = 0
                    with self.sftp.open(target, "wbx") as fh:  # O_EXCL: a new name, never through a link
                        fh.set_pipelined(True)  # not one round trip per 32 KiB write: the acks are read below
                        for data in source.chunks(entry, CHUNK_BYTES):
                            fh.write(data)
                            sent += len(data)
                        fh.flush()  # every write sent, so that each has its ack to read
                        _acked(fh, shown)
                    _all_written(self.sftp.lstat(target).st_size, sent, shown)
                self.sftp.chmod(target, safe_mode(entry.kind, entry.mode))

    def commit(self, parts: tuple[str, ...], temp: str) -> None:
        with _named("/".join(parts)):
            self.sftp.posix_rename(self.path((*parts[:-1], temp)), self.path(parts))

    def abort(self, parts: tuple[str, ...], temp: str) -> None:
        try:
            self._remove(self.path((*parts[:-1], temp)))
            for made in reversed(self.made):  # the parents prepare() made, while empty
                self.sftp.rmdir(self.path(made))
        except Exception:  # noqa: BLE001 - abort never raises: the transfer's own error is what counts
            pass

    def _remove(self, path: str) -> None:
        st = self.sftp.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            for attr in self.sftp.listdir_attr(path):
                if name_problem(attr.filename) is None:
                    self._remove(posixpath.join(path, attr.filename))
            self.sftp.rmdir(path)
        else:
            self.sftp.remove(path)


#: Why a write the SFTP server refused (SFTP v3 has one ``Failure`` status for ENOSPC, EDQUOT, EIO ...).
_REFUSED_WRITE = "the SFTP server refused a write ({}): is the kernel host's disk full, or the ssh user over a quota?"


def _acked(fh: Any, shown: str) -> None:
    """Read the server's answer to each pipelined write of ``fh``: paramiko's ``close()`` reads none
    (they are its anonymous requests), so a refused one, a full disk, went unseen and a file cut
    short was reported copied whole (and renamed over what was there).

    :raises FileTransferError: naming ``shown``, if the server refused a write.
    """
    pending = getattr(fh, "_reqs", None)  # (paramiko's own queue; :func:`_all_written` checks without it)
    while pending:
        try:
            fh.sftp._read_response(pending.popleft())
        except OSError as exc:
            if exc.errno is not None:
                raise
            problem = _REFUSED_WRITE.format(str(exc) or "Failure")
            raise FileTransferError(f"{shown} could not be written: {problem}", path=shown, problem=problem) from exc


def _all_written(size: int | None, sent: int, shown: str) -> None:
    """:raises FileTransferError: naming ``shown``, if the file on the kernel's host is not the
    ``sent`` bytes long (a refused write whose answer was not read)."""
    if size is not None and size != sent:
        problem = _REFUSED_WRITE.format(f"{size} of {sent} bytes were written")
        raise FileTransferError(f"{shown} could not be written: {problem}", path=shown, problem=problem)


@contextmanager
def _named(shown: str) -> Iterator[None]:
    """An SFTP refusal (paramiko's ``OSError``: an errno and the server's text, no path), or the
    end of the session (``EOFError``, ``SSHException``: the connection dropped, or its keepalives
    went unanswered), as a :class:`FileTransferError` naming ``shown``."""
    from paramiko import SSHException

    try:
        yield
    except FileTransferError:
        raise
    except (OSError, EOFError, SSHException) as exc:
        if isinstance(exc, OSError) and exc.errno is not None:
            problem = exc.strerror or str(exc)
        else:
            detail = str(exc).strip().rstrip(":")  # paramiko's "Server connection dropped: "
            cause = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
            problem = f"could not be copied: the SFTP session ended ({cause})"
        raise FileTransferError(f"{shown} {problem}", path=shown, problem=problem) from exc


def _not_utf8(shown: str, *, listing: bool = False) -> FileTransferError:
    """The error for a name SFTP cannot carry (nothing was copied)."""
    what = f"{shown or '.'} holds a name" if listing else f"{shown} is a name"
    return FileTransferError(f"{what} that is not UTF-8: the ssh transport's SFTP (paramiko) carries UTF-8 names "
                             "only; nothing was copied. Hint: use a UTF-8 name (rename the file in a cell)",
                             path=shown, problem="not UTF-8")


def _check_dir(st: Any | None, shown: str, workdir: str) -> None:
    """:raises FileTransferError: naming ``shown``, or the working dir itself (``"."``) by its path,
    as the other transports do."""
    said = f"the working dir {workdir.rstrip('/') or '/'}" if shown == "." else shown
    if st is None:
        raise FileTransferError(f"{said} does not exist", path=shown, problem="does not exist")
    if stat.S_ISLNK(st.st_mode):
        raise UnsafePathError(f"{said} is a symlink (never followed)", path=shown, problem="is a symlink")
    if not stat.S_ISDIR(st.st_mode):
        raise FileTransferError(f"{said} is not a directory", path=shown, problem="is not a directory")
