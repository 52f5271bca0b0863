"""The kernel side of file transfers: walk, read and write under a kernel's working dir, never
following a symlink.

Stdlib only, importing nothing of the package, and Python 3.8-compatible: the local transport
calls these functions in-process, and the docker and filecell transports ship this module's
source to the kernel's side and run it there as ``python3 -c SOURCE`` with one JSON request
(argv[1] or stdin), which prints one ``HERMES-FILES <json>`` line (:func:`main`).

Every path is a list of plain names (``parts``) under the working dir ``wd``. ``wd`` is opened
with ``O_NOFOLLOW`` on its last component (a cell that swapped its kernel dir for a symlink is
refused); its parent components are the host's choice and are followed, and so is a ``cwd=``
whole, which comes with a trailing slash. Below ``wd`` every
component is opened relative to its parent's fd with ``O_NOFOLLOW``, so a symlink planted
anywhere on the path is refused (``ELOOP``), and a swap after the check cannot redirect the
operation: it acts on the fds already open, never on a name looked up again.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import stat
import sys
from typing import Any, Dict, Iterator, List, Optional, Tuple

#: The one line prefix of a result printed by :func:`main`.
RESULT_PREFIX = "HERMES-FILES "
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_KINDS = ((stat.S_ISDIR, "dir"), (stat.S_ISREG, "file"), (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
          (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"))


def refused(entry: str, problem: str, code: int = errno.EPERM) -> OSError:
    """The error of a refused operation: an :class:`OSError` whose ``filename`` is the entry
    (slash-joined parts) and whose ``strerror`` is the problem (the host makes its own error of it)."""
    return OSError(code, problem, entry)


def kind_of(mode: int) -> str:
    """``file``, ``dir``, ``symlink``, ``fifo``, ``socket``, ``device`` or ``other`` for ``st_mode``."""
    for test, kind in _KINDS:
        if test(mode):
            return kind
    return "other"


def _open_dir(parent: int, name: str, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except OSError as exc:
        st = lstat_at(parent, name) if exc.errno in (errno.ENOTDIR, errno.ELOOP) else None
        if st is not None and stat.S_ISLNK(st.st_mode):  # Linux says ENOTDIR for O_DIRECTORY|O_NOFOLLOW
            raise refused(shown, "is a symlink (never followed)", errno.ELOOP) from None
        raise refused(shown, _problem(exc), exc.errno) from None


def _problem(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink (never followed)"
    if exc.errno == errno.ENOTDIR:
        return "is not a directory"
    if exc.errno == errno.ENOENT:
        return "does not exist"
    return exc.strerror or str(exc)


def open_wd(wd: str) -> int:
    """The working dir's fd (``O_NOFOLLOW`` on its last component)."""
    try:
        return os.open(wd, _DIR_FLAGS)
    except OSError as exc:
        link = exc.errno in (errno.ENOTDIR, errno.ELOOP) and os.path.islink(wd)
        problem = "is a symlink (never followed)" if link else _problem(exc)
        raise refused(".", f"the working dir {wd.rstrip('/') or '/'} {problem}", errno.ELOOP if link else exc.errno) from None


def open_parent(wd: str, parts: List[str], create: bool = False, made: Optional[List[List[str]]] = None) -> int:
    """The fd of the directory holding ``parts[-1]``, walked without following symlinks.

    :param create: make missing directories on the way (mode 0777 less the umask).
    :param made: where the directories made are listed (their parts), the top first.
    :raises OSError: if a component is a symlink, not a directory, or missing (without ``create``).
    """
    fd = open_wd(wd)
    try:
        for i, name in enumerate(parts[:-1]):
            shown = "/".join(parts[:i + 1])
            if create:
                try:
                    os.mkdir(name, dir_fd=fd)
                    if made is not None:
                        made.append(parts[:i + 1])
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise refused(shown, _problem(exc), exc.errno) from None
            child = _open_dir(fd, name, shown)
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def lstat_at(parent: int, name: str) -> Optional[os.stat_result]:
    """``lstat`` of ``name`` in the directory ``parent``; ``None`` if it does not exist."""
    try:
        return os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None


def list_tree(wd: str, parts: List[str]) -> List[List[Any]]:
    """Every entry at and below ``parts``: ``[rel parts, kind, size, mode, nlink]``, the top first
    (``rel parts`` ``[]``), parents before children; no symlink is followed, none descended into.

    :raises OSError: if a component of ``parts`` is a symlink or missing, or the top is a symlink.
    """
    parent = open_parent(wd, parts)
    try:
        st = lstat_at(parent, parts[-1])
        if st is None:
            raise refused("/".join(parts), "does not exist", errno.ENOENT)
        if stat.S_ISLNK(st.st_mode):
            raise refused("/".join(parts), "is a symlink (never followed)", errno.ELOOP)
        found = [[[], kind_of(st.st_mode), st.st_size, st.st_mode, st.st_nlink]]
        if stat.S_ISDIR(st.st_mode):
            top = _open_dir(parent, parts[-1], "/".join(parts))
            try:
                found += _walk(top, [])
            except RecursionError:  # (a traceback on local, "no answer" from a container)
                raise refused("/".join(parts), "is nested too deeply to copy (about 1000 directories)", errno.ELOOP) from None
    finally:
        os.close(parent)
    return found


def _walk(fd: int, rel: List[str]) -> List[List[Any]]:
    """Entries under the open directory ``fd`` (closed here), depth first, sorted by name."""
    found: List[List[Any]] = []
    try:
        with os.scandir(fd) as it:
            entries = sorted(it, key=lambda e: e.name)
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            found.append([rel + [entry.name], kind_of(st.st_mode), st.st_size, st.st_mode, st.st_nlink])
            if stat.S_ISDIR(st.st_mode):
                found += _walk(_open_dir(fd, entry.name, "/".join(rel + [entry.name])), rel + [entry.name])
    finally:
        os.close(fd)
    return found


def open_regular(wd: str, parts: List[str]) -> int:
    """An fd open for reading on the regular file ``parts``, with one name only (no hard link).

    :raises OSError: if it is a symlink, not a regular file, or has more than one name.
    """
    parent = open_parent(wd, parts)
    try:
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=parent)
    except OSError as exc:
        raise refused("/".join(parts), _problem(exc), exc.errno) from None
    finally:
        os.close(parent)
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise refused("/".join(parts), f"changed during the copy (now a {kind_of(st.st_mode)}, {st.st_nlink} names)")
    return fd


def prepare(wd: str, parts: List[str], kind: str) -> List[List[str]]:
    """Make the parents of ``parts`` (never through a symlink) and check the destination: absent,
    or a regular file that an uploaded ``file`` replaces.

    :returns: the directories it made (their parts, the top first): an aborted upload removes them.
    :raises OSError: if a parent is a symlink or not a directory, or the destination exists otherwise.
    """
    made: List[List[str]] = []
    parent = open_parent(wd, parts, create=True, made=made)
    try:
        st = lstat_at(parent, parts[-1])
    finally:
        os.close(parent)
    if st is None or (kind == "file" and stat.S_ISREG(st.st_mode)):
        return made
    what = "a symlink (never followed)" if stat.S_ISLNK(st.st_mode) else f"a {kind_of(st.st_mode)}"
    raise refused("/".join(parts), f"already exists, as {what}",
                  errno.ELOOP if stat.S_ISLNK(st.st_mode) else errno.EEXIST)


def make_dir(wd: str, parts: List[str], mode: int) -> None:
    """``mkdir`` of ``parts`` (its parents must exist, and be no symlinks)."""
    parent = open_parent(wd, parts)
    try:
        os.mkdir(parts[-1], mode, dir_fd=parent)
        fd = _open_dir(parent, parts[-1], "/".join(parts))
        os.fchmod(fd, mode)
        os.close(fd)
    except OSError as exc:
        raise refused("/".join(parts), _problem(exc), exc.errno) from None
    finally:
        os.close(parent)


def _open_last(wd: str, parts: List[str], flags: int, mode: int = 0o600) -> int:
    """An fd on the last component of ``parts``, opened with ``flags | O_NOFOLLOW`` in its parent
    (itself reached without following a symlink); the refusal names the path."""
    parent = open_parent(wd, parts)
    try:
        return os.open(parts[-1], flags | os.O_NOFOLLOW, mode, dir_fd=parent)
    except OSError as exc:
        raise refused("/".join(parts), _problem(exc), exc.errno) from None
    finally:
        os.close(parent)


def create_file(wd: str, parts: List[str], data: bytes = b"", mode: int = 0o600) -> None:
    """Create the new file ``parts`` (``O_EXCL``: never an existing name) with ``data`` (its first
    chunk), private (0600) until it is written, then ``mode`` (one request for a small file)."""
    fd = _open_last(wd, parts, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fchmod(fd, mode)
    except OSError as exc:
        raise refused("/".join(parts), _problem(exc), exc.errno) from None
    finally:
        os.close(fd)


def append_file(wd: str, parts: List[str], data: bytes) -> None:
    """Append ``data`` to the regular file ``parts`` (never through a symlink)."""
    fd = _open_last(wd, parts, os.O_WRONLY | os.O_APPEND)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def set_mode(wd: str, parts: List[str], mode: int) -> None:
    """``chmod`` of ``parts`` through an fd opened without following a symlink."""
    fd = _open_last(wd, parts, os.O_RDONLY | os.O_NONBLOCK)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def rename_into_place(wd: str, parts: List[str], temp: str) -> None:
    """Rename ``temp`` (beside ``parts``) to ``parts``: a file or symlink there is replaced, never
    followed; a directory there refuses a file, and a non-empty one refuses a directory."""
    parent = open_parent(wd, parts)
    try:
        os.rename(temp, parts[-1], src_dir_fd=parent, dst_dir_fd=parent)
    except OSError as exc:
        raise refused("/".join(parts), _problem(exc), exc.errno) from None
    finally:
        os.close(parent)


def remove_tree(wd: str, parts: List[str], temp: str) -> None:
    """Remove ``temp`` (beside ``parts``) and everything below it, never following a link; never raises."""
    try:
        parent = open_parent(wd, parts)
    except OSError:
        return
    try:
        _remove_at(parent, temp)
    finally:
        os.close(parent)


def remove_empty_dirs(wd: str, dirs: List[List[str]]) -> None:
    """``rmdir`` each of ``dirs`` (parts, deepest first) while it is empty; never raises."""
    for parts in dirs:
        try:
            parent = open_parent(wd, parts)
        except OSError:
            return
        try:
            os.rmdir(parts[-1], dir_fd=parent)
        except OSError:  # not empty (someone else's now), or gone
            return
        finally:
            os.close(parent)


def _remove_at(parent: int, name: str) -> None:
    st = lstat_at(parent, name)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        fd = _open_dir(parent, name, name)
        try:
            for child in os.listdir(fd):
                _remove_at(fd, child)
        finally:
            os.close(fd)
    try:
        if stat.S_ISDIR(st.st_mode):
            os.rmdir(name, dir_fd=parent)
        else:
            os.unlink(name, dir_fd=parent)
    except OSError:
        pass


def read_chunk(wd: str, parts: List[str], offset: int, length: int) -> bytes:
    """``length`` bytes of the regular file ``parts`` from ``offset``: fewer only at its end
    (the reader takes a short answer for the end, so a short ``pread`` is read on)."""
    fd = open_regular(wd, parts)
    try:
        found = []
        while length > 0:
            data = os.pread(fd, length, offset)
            if not data:
                break
            found.append(data)
            offset, length = offset + len(data), length - len(data)
        return b"".join(found)
    finally:
        os.close(fd)


def iter_chunks(wd: str, parts: List[str], chunk_bytes: int) -> Iterator[bytes]:
    """The content of the regular file ``parts`` in chunks of up to ``chunk_bytes``."""
    fd = open_regular(wd, parts)
    try:
        while True:
            data = os.read(fd, chunk_bytes)
            if not data:
                return
            yield data
    finally:
        os.close(fd)


def handle(request: Dict[str, Any]) -> Dict[str, Any]:
    """Run one JSON request (``op``, ``wd``, ``parts`` and the op's arguments); the JSON-able answer."""
    op, wd, parts = request["op"], request["wd"], request["parts"]
    if op == "list":
        return {"entries": list_tree(wd, parts)}
    if op == "read":
        return {"data": base64.b64encode(read_chunk(wd, parts, request["offset"], request["length"])).decode("ascii")}
    if op == "prepare":
        return {"made": prepare(wd, parts, request["kind"])}
    if op == "rmdirs":
        remove_empty_dirs(wd, request["dirs"])
    elif op == "append":
        append_file(wd, parts, base64.b64decode(request["data"]))
    elif op == "create":
        create_file(wd, parts, base64.b64decode(request.get("data", "")), request.get("mode", 0o600))
    elif op in _OPS:
        _OPS[op](wd, parts, *[request[name] for name in _OP_ARGS.get(op, ())])
    else:
        raise refused("/".join(parts), "unknown operation " + repr(op))
    return {}


_OPS = {"mkdir": make_dir, "chmod": set_mode,
        "rename": rename_into_place, "remove": remove_tree}
_OP_ARGS = {"mkdir": ("mode",), "chmod": ("mode",), "rename": ("temp",), "remove": ("temp",)}


def main(argv: Tuple[str, ...] = tuple(sys.argv[1:])) -> None:
    """``python3 -c SOURCE [REQUEST]``: one request (argv, else stdin), one result line."""
    request = json.loads(argv[0] if argv else sys.stdin.read())
    try:
        answer = handle(request)
    except OSError as exc:
        entry = exc.filename if isinstance(exc.filename, str) else "/".join(request.get("parts") or [])
        answer = {"refused": {"entry": entry, "problem": exc.strerror or str(exc), "errno": exc.errno}}
    sys.stdout.write(RESULT_PREFIX + json.dumps(answer) + "\n")


def shipped_source() -> str:
    """This module's source, ending in a call of :func:`main`: the program for ``python3 -c``."""
    with open(__file__, encoding="utf-8") as fh:
        return fh.read() + "\nmain()\n"


def parse_result(output: str) -> Optional[Dict[str, Any]]:
    """The answer in the output of a shipped run (the last ``HERMES-FILES`` line); ``None`` if none."""
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            answer: Dict[str, Any] = json.loads(line[len(RESULT_PREFIX):])
            return answer
    return None
