"""A docker kernel's files: contents through ``get_archive`` / ``put_archive``, every check and
rename through :mod:`..filetree` requests run by ``docker exec`` as the kernel's user.

Download: the tree is listed where it lives (``lstat``, no symlink followed), planned, then
fetched as one tar that the kernel's user makes in the container (:data:`ARCHIVE_SCRIPT`, run by
``docker exec``; never ``get_archive``, which the engine reads as root: a cell that swapped a
listed directory for a symlink in the milliseconds before it had the host copy out a file only
root may read, such as ``/etc/shadow``). The tar is never extracted as it is: each member is matched to
the listing by name and type, checked again with :func:`tarfile.data_filter` (PEP 706, in
Python 3.11.4+; the rules of :mod:`~pytest_hermes_kernel.kernel.files` are checked here
first, so an interpreter without it loses nothing), and only a regular file's bytes are written
(by :class:`~pytest_hermes_kernel.kernel.transfer.Staging`). A ``..`` name, an absolute name, a
link or device member, or a member the listing did not have, is rejected and reported.

Upload: the destination's parents are made and checked (no symlink on the way), the tree is
sent by ``put_archive`` as a tar of plain entries (regular files and directories, safe modes,
the kernel user's uid/gid) under a temp name in the parent, then renamed into place by a
request. The engine resolves the parent's path inside the container, so between the check and
the ``put_archive`` (milliseconds) a process of the kernel that swaps a checked directory for a
symlink could redirect the write elsewhere *inside the container*, never onto this machine.
"""

from __future__ import annotations

import io
import json
import posixpath
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from ...containers.engines import disk_full_hint
from ...errors import FileTransferError
from ...kernel.files import Entry, Plan, Sink, Source, host_name, name_problem, safe_mode, shown_path
from .. import filetree
from ..files import RequestFiles

if TYPE_CHECKING:
    from .stream import DockerExecStream
    from .transport import DockerTransport

__all__ = ["DockerFiles", "plain_tar"]

#: A member type that carries content (``tarfile`` calls both regular).
_REGULAR = (tarfile.REGTYPE, tarfile.AREGTYPE)


class DockerFiles(RequestFiles):
    """The files of one docker kernel under its working dir.

    :param transport: the docker transport (its API client and exec helper).
    :param container_id: the kernel's container.
    :param workdir: the working dir inside the container.
    :param owner: uid and gid of the container's user (what the uploaded entries are owned by).
    :param python: the interpreter the requests and the archive run with: the kernel's.
    """

    def __init__(self, transport: DockerTransport, container_id: str, workdir: str, owner: tuple[int, int],
                 python: str = "python3") -> None:
        super().__init__(workdir)
        self.transport = transport
        self.container_id = container_id
        self.owner = owner
        self.python = python

    def request(self, op: str, parts: tuple[str, ...], *, user: str = "", **args: Any) -> dict[str, Any] | None:
        request = json.dumps({"op": op, "wd": self.workdir, "parts": list(parts), **args})
        # as the kernel's user ("": the image's), like the cells: root would write files they cannot touch
        with self.engine("/".join(parts)):
            _code, out = self.transport.run_script(self.container_id, filetree.shipped_source(), request, user=user,
                                                   python=self.python)
        return filetree.parse_result(out.decode("utf-8", "replace"))

    @contextmanager
    def engine(self, shown: str) -> Iterator[None]:
        """The engine's refusal (a container that is not running or gone, an engine that does not
        answer) as a :class:`FileTransferError` naming ``shown``, not docker's bare ``APIError``."""
        from docker.errors import DockerException
        from requests.exceptions import RequestException
        from urllib3.exceptions import HTTPError  # the archive's raw stream, cut mid-way

        try:
            yield
        except (DockerException, RequestException, HTTPError) as exc:
            full = disk_full_hint(exc)  # (it said the container "cannot be reached": it was, its disk full)
            problem = (f"could not be copied: the kernel's container {self.container_id[:12]} has no room for it "
                       f"({exc}). {full}" if full else
                       f"could not be copied: the kernel's container {self.container_id[:12]} cannot be reached ({exc})")
            raise FileTransferError(f"{shown or '.'} {problem}", path=shown or ".", problem=problem) from exc

    def abort(self, parts: tuple[str, ...], temp: str) -> None:
        """Remove ``temp`` as root: ``put_archive`` wrote it as the engine does (root), so it may be
        where the kernel's user cannot remove it (a directory it cannot write, whose rename it
        was refused); the removal never follows a link."""
        super().abort(parts, temp, user="root")

    def path(self, parts: tuple[str, ...]) -> str:
        """The absolute path of ``parts`` inside the container."""
        return posixpath.join(self.workdir, *parts)

    def archive(self, parts: tuple[str, ...]) -> Iterator[bytes]:
        """The tar of ``parts`` as the kernel's user makes it (:data:`ARCHIVE_SCRIPT`): its bytes as
        they come (a seam for tests). An entry that user cannot read is left out (the fetch reports
        it not copied).

        :raises FileTransferError: (while iterated) if ``parts`` does not exist, or the engine or
            the container fails meanwhile.
        """
        shown = "/".join(parts)
        with self.engine(shown):  # as the kernel's user ("": the image's), as the listing ran
            stream = self.transport.open_exec(self.container_id, [self.python, "-I", "-c", ARCHIVE_SCRIPT,
                                                                  self.path(parts)], user="", stdin=False)
        return _archive_chunks(self, shown, stream)

    def fetch(self, parts: tuple[str, ...], plan: Plan, sink: Sink) -> None:
        planned = {e.parts: e for e in plan.files}
        accepted = {e.parts for e in plan.entries}
        reported = {r.path for r in plan.rejected}  # the listing's rejections are reported once
        shown = "/".join(parts)
        try:
            self._fetch_members(parts, planned, accepted, reported, sink)
        except (tarfile.TarError, EOFError) as exc:  # a stream cut mid-file, a damaged header
            raise FileTransferError(f"{shown}: the archive from the container was cut short or damaged ({exc}); "
                                    "nothing was kept", path=shown, problem="damaged archive") from exc
        for rel in planned:  # listed, then gone (or no longer a file) by the time it was archived, or cut off
            sink.reject(shown_path(shown, rel), "not in the archive (removed or changed during the copy, not "
                                                "readable by the kernel's user, or the archive was cut short): not copied")

    def _fetch_members(self, parts: tuple[str, ...], planned: dict[tuple[str, ...], Entry], accepted: set[Any],
                       reported: set[str], sink: Sink) -> None:
        """Write the archive's planned files to ``sink`` (``planned`` loses each one it met)."""
        shown = "/".join(parts)
        chunks = self.archive(parts)
        try:
            with tarfile.open(fileobj=_ChunkReader(chunks), mode="r|") as tar:
                written: tuple[str, Entry] | None = None
                for member in tar:
                    rel, problem = _member_parts(member.name, parts[-1])
                    path = member.name if rel is None else shown_path(shown, rel)
                    if SHORT_MARK in member.pax_headers:  # the file before it shrank as it was read: padded
                        if written is not None and written[0] == path:
                            sink.discard(written[1], path, f"changed during the copy (shorter: {member.pax_headers[SHORT_MARK]} "
                                                           "bytes of it were read): not copied")
                        continue
                    written = None
                    if path in reported:
                        continue
                    entry = None if rel is None else planned.pop(rel, None)
                    problem = problem or _member_problem(member, entry, rel in accepted)
                    if problem:
                        sink.reject(path, problem)
                    elif entry is not None:
                        sink.write(entry, _member_chunks(tar, member))
                        written = (path, entry)
        finally:  # an error (too large, a local write) ends the archive's exec now, not once the error is dropped
            getattr(chunks, "close", lambda: None)()

    def write_tree(self, parts: tuple[str, ...], temp: str, plan: Plan, source: Source) -> None:
        uid, gid = self.owner
        with tempfile.TemporaryFile() as buf:  # up to max_transfer_bytes: on disk, not in memory
            plain_tar(buf, temp, plan, source, uid, gid)
            buf.seek(0)
            with self.engine("/".join(parts)):
                self.transport.api.put_archive(self.container_id, self.path(parts[:-1]), buf)


def plain_tar(buf: Any, top: str, plan: Plan, source: Source, uid: int, gid: int) -> None:
    """Write to ``buf`` a tar of ``plan`` named ``top``: directories and regular files only,
    plain relative names, :func:`~pytest_hermes_kernel.kernel.files.safe_mode` modes (no
    setuid, setgid or sticky bit), owned by ``uid``/``gid``."""
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in plan.entries:
            info = tarfile.TarInfo("/".join((top, *entry.parts)))
            info.mode, info.uid, info.gid, info.mtime = safe_mode(entry.kind, entry.mode), uid, gid, int(time.time())
            if entry.kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
                continue
            info.size = entry.size
            content = _ListedSize(source.chunks(entry, 1 << 20), entry.size,
                                  str(PurePath(getattr(source, "root", top), *entry.parts)))
            try:
                tar.addfile(info, content)  # copied a block at a time: never the whole file in memory
                content.finish()
            finally:
                content.close()


#: The pax key of :data:`ARCHIVE_SCRIPT`'s mark after a file that shrank as it was read (its
#: member padded with zeros to the size its header said): how many of its bytes were read.
SHORT_MARK = "HERMES.short"
#: Exit status of :data:`ARCHIVE_SCRIPT` when the path does not exist; any other but 0: it failed
#: mid-file (the archive is cut there).
ARCHIVE_MISSING = 3
#: ``python3 -I -c ARCHIVE_SCRIPT PATH``: a tar of ``PATH`` on stdout, made by whoever runs it (the
#: kernel's user): nothing followed below ``PATH``, a regular file opened without following a link
#: (``O_NOFOLLOW``, and ``O_NONBLOCK``: a FIFO swapped in meanwhile never blocks it) and archived as
#: the opened file is; what cannot be read is left out and named on stderr. Python 3.8+.
ARCHIVE_SCRIPT = r"""
import io, os, stat, sys, tarfile
tarfile.pwd = tarfile.grp = None  # no user and group names looked up per entry: the host reads none
SMALL = 1 << 20
class Exact:  # a file read as exactly n bytes: zeros after an early end (it shrank), marked after it
    def __init__(self, fh, n):
        self.fh, self.left, self.got = fh, n, 0
    def read(self, size):
        data = self.fh.read(min(size, self.left))
        self.got += len(data)
        data += bytes(min(size, self.left) - len(data))
        self.left -= len(data)
        return data
def add(tar, path, name):
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            fh = os.fdopen(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb")
            info = tar.gettarinfo(arcname=name, fileobj=fh)
            if info.isreg() and info.size <= SMALL:  # read whole, archived as read: one rewritten meanwhile
                data = fh.read(SMALL + 1)  # (truncated, then written) never cuts the archive short
                fh.seek(0)
                if len(data) <= SMALL:
                    fh.close()
                    fh, info.size = io.BytesIO(data), len(data)
        else:
            fh, info = None, tar.gettarinfo(path, arcname=name)
    except OSError as exc:
        sys.stderr.write("%s: %s\n" % (name, exc.strerror or exc))
        return
    try:
        if info is not None and (fh is None or info.isreg()):
            info.mtime = int(info.mtime)  # a float one costs every member a pax header
            body = fh if fh is None or isinstance(fh, io.BytesIO) else Exact(fh, info.size)
            tar.addfile(info, body)
            if isinstance(body, Exact) and body.got < info.size:  # the host drops the padded file
                mark = tarfile.TarInfo(name)
                mark.pax_headers = {"HERMES.short": str(body.got)}
                tar.addfile(mark)
    except OSError as exc:
        sys.stderr.write("%s: %s (the archive is cut here)\n" % (name, exc.strerror or exc))
        sys.exit(4)
    finally:
        if fh is not None:
            fh.close()
    if stat.S_ISDIR(st.st_mode):
        try:
            names = sorted(os.listdir(path))
        except OSError as exc:
            sys.stderr.write("%s: %s\n" % (name, exc.strerror or exc))
            return
        for entry in names:
            add(tar, os.path.join(path, entry), name + "/" + entry)
top = sys.argv[1]
if not os.path.lexists(top):
    sys.exit(3)
with tarfile.open(fileobj=sys.stdout.buffer, mode="w|", format=tarfile.PAX_FORMAT, bufsize=1 << 20) as tar:
    tar.copybufsize = 1 << 20  # (3.8+; 16 KiB reads and writes by default)
    add(tar, top, os.path.basename(top.rstrip("/")))
"""
#: Seconds to wait for the engine to report an archive exec's exit after its output ended, while
#: its container runs (a loaded engine took over 5 s, the wait there was, and a complete download
#: failed "its container stopped").
ARCHIVE_EXIT_WAIT_S = 60.0
#: Seconds the archive may send no byte before the download gives up (its process stopped: it
#: runs as the kernel's user, whose leftover can SIGSTOP it; a read that hangs). ``None``: the
#: engine client's timeout (60 s), what each read of ``get_archive`` had.
ARCHIVE_STALL_S: float | None = None


def _archive_chunks(files: DockerFiles, shown: str, stream: DockerExecStream) -> Iterator[bytes]:
    """The archive exec's stdout, then its exit checked; a drop of the engine mid-way as the
    error naming ``shown``."""
    stall = ARCHIVE_STALL_S or files.transport.api.timeout or 60.0
    with files.engine(shown):
        try:
            while chunk := _next_chunk(stream, shown, stall):
                yield chunk
            code = _exit_code(files, stream.exec_id)
        finally:
            stream.close()
    if code == ARCHIVE_MISSING:
        raise FileTransferError(f"{shown} does not exist (it was removed during the copy)", path=shown,
                                problem="does not exist")
    if code != 0:
        why = stream.stderr_text().strip() or (f"exit code {code}" if isinstance(code, int) else code)
        raise FileTransferError(f"{shown}: the archive could not be made in the container ({why}); nothing was kept",
                                path=shown, problem="damaged archive")


def _next_chunk(stream: DockerExecStream, shown: str, stall: float) -> bytes:
    try:
        return stream.recv(stall)
    except TimeoutError:  # (it waited for good: a cell's leftover had SIGSTOPped the archiver)
        raise FileTransferError(f"{shown}: no byte of the archive came from the container for {stall:g} s (its "
                                "process stopped, or a read hangs); nothing was kept", path=shown,
                                problem="archive stalled") from None


def _exit_code(files: DockerFiles, exec_id: str) -> int | str:
    """The exec's exit code once the engine has it, else why it has none: its container stopped
    (looked at each second), or the engine did not say within :data:`ARCHIVE_EXIT_WAIT_S`."""
    api = files.transport.api
    start = time.monotonic()
    looked = start
    while True:
        info = api.exec_inspect(exec_id)
        if not info.get("Running"):
            code = info.get("ExitCode")
            return code if isinstance(code, int) else "its container stopped"
        now = time.monotonic()
        if now - start >= ARCHIVE_EXIT_WAIT_S:
            return f"the docker engine did not report its exit within {ARCHIVE_EXIT_WAIT_S:g} s"
        if now - looked >= 1.0:
            looked = now
            if not api.inspect_container(info.get("ContainerID") or "").get("State", {}).get("Running"):
                return "its container stopped"
        time.sleep(0.01 if now - start < 1.0 else 0.1)  # (the engine says it at once, but under load)


def _member_parts(name: str, top: str) -> tuple[tuple[str, ...] | None, str | None]:
    """A member's names below the top (``None`` and the problem when its name is not safe)."""
    names = name.rstrip("/").split("/")
    for part in names:
        if (problem := name_problem(part)) is not None:
            return None, f"its name {problem}: not copied"
    if names[0] != top:
        return None, f"outside the archived {top!r}: not copied"
    return tuple(names[1:]), None


def _member_problem(member: tarfile.TarInfo, entry: Entry | None, listed: bool) -> str | None:
    """Why a member (whose name is safe) is not written; ``None`` to write it (or skip a directory)."""
    if member.issym() or member.islnk():
        return f"a {'symlink' if member.issym() else 'hard link'} in the archive (to {member.linkname!r}): not copied"
    if member.isdir():  # (a listed file that is a directory now: written, it was an empty file)
        return "a directory now, a file when listed: not copied" if entry is not None else \
            None if listed else "a directory the listing did not have: not copied"
    if member.type not in _REGULAR:
        return "a FIFO or device in the archive: not copied"
    if entry is None:
        return None if listed else "a file the listing did not have: not copied"
    data_filter = getattr(tarfile, "data_filter", None)  # PEP 706: 3.11.4+
    if data_filter is not None:
        try:
            data_filter(member.replace(name=host_name(member.name), deep=False), "/nonexistent-hermes-dest")
        except tarfile.FilterError as exc:
            return f"refused by tarfile's data filter: {exc}"
    return None


def _member_chunks(tar: tarfile.TarFile, member: tarfile.TarInfo) -> Iterator[bytes]:
    fh = tar.extractfile(member)
    if fh is None:
        return
    while data := fh.read(1 << 20):
        yield data


class _ListedSize:
    """A file's chunks read as a file of its listed ``size``, the size its tar header holds.

    :raises FileTransferError: if the file is shorter or longer now (it changed since the
        listing): the archive would be cut or padded, so nothing of it is sent.
    """

    def __init__(self, chunks: Iterator[bytes], size: int, shown: str) -> None:
        self._chunks = chunks
        self._rest = memoryview(b"")
        self._left = size
        self._shown = shown

    def read(self, n: int = -1) -> bytes:
        want = self._left if n < 0 else min(n, self._left)
        parts = []
        while want:
            if not self._rest:
                self._rest = memoryview(next(self._chunks, b""))
                if not self._rest:
                    raise self._changed("shorter")
            take = self._rest[:want]
            self._rest, want, self._left = self._rest[len(take):], want - len(take), self._left - len(take)
            parts.append(take)
        return b"".join(parts)

    def finish(self) -> None:
        """Check the file ended at its listed size."""
        if self._rest or next(self._chunks, b""):
            raise self._changed("longer")

    def close(self) -> None:
        """Close the chunks (a generator holding the file open)."""
        getattr(self._chunks, "close", lambda: None)()

    def _changed(self, how: str) -> FileTransferError:
        return FileTransferError(f"{self._shown} changed during the upload: {how} than its listed size",
                                 path=self._shown, problem="changed during the upload")


class _ChunkReader(io.RawIOBase):
    """A readable file over an iterator of byte chunks (the engine's archive stream)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks = chunks
        self._rest = memoryview(b"")  # a view: each read copies what it takes, never the rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._rest:
            try:
                self._rest = memoryview(next(self._chunks))
            except StopIteration:
                return 0
        n = min(len(buffer), len(self._rest))
        buffer[:n], self._rest = self._rest[:n], self._rest[n:]
        return n
