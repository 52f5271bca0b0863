"""Kernel files through :mod:`.filetree` requests: the base of the local, docker and filecell
transports' :class:`~pytest_hermes_kernel.kernel.files.KernelFiles`, and the local one.

A request is one :func:`.filetree.handle` call: in-process for local kernels, a ``python3 -c``
of the module's source where the kernel runs for docker (an exec) and filecell (through the
backend). :class:`RequestFiles` turns the port's steps into requests; a subclass says how a
request travels (:meth:`RequestFiles.request`) and may move file contents its own way (docker:
archives; local: file descriptors).
"""

from __future__ import annotations

import base64
import errno
from abc import abstractmethod
from collections.abc import Iterator
from typing import Any, ClassVar

from ..kernel.files import (Entry, EntryKind, KernelFiles, Plan, Sink, Source, host_name, kernel_name, refusal,
                            safe_mode)
from . import filetree

__all__ = ["LocalFiles", "RequestFiles", "answer_of"]


def answer_of(answer: dict[str, Any] | None, what: str) -> dict[str, Any]:
    """A request's answer, or its refusal as the typed error.

    :param what: the request, for the error when there was no answer at all.
    :raises FileTransferError: if it was refused (:class:`UnsafePathError` for a symlink).
    """
    from ..errors import FileTransferError

    if answer is None:
        raise FileTransferError(f"the kernel's side gave no answer to {what}", path=None, problem="no answer")
    if "refused" in answer:
        refused = answer["refused"]
        raise refusal(refused["entry"], refused["problem"], symlink=refused.get("errno") == errno.ELOOP)
    return answer


class RequestFiles(KernelFiles):
    """:class:`~pytest_hermes_kernel.kernel.files.KernelFiles` made of :mod:`.filetree` requests."""

    #: Bytes of file content per ``read`` / ``append`` request.
    chunk_bytes: ClassVar[int] = 48 * 1024

    @abstractmethod
    def request(self, op: str, parts: tuple[str, ...], **args: Any) -> dict[str, Any] | None:
        """Send one request to the kernel's side; its answer (``None``: no answer came)."""

    def call(self, op: str, parts: tuple[str, ...], **args: Any) -> dict[str, Any]:
        """:meth:`request`, its refusal raised as the typed error."""
        return answer_of(self.request(op, parts, **args), f"{op} {'/'.join(parts)}")

    def list_tree(self, parts: tuple[str, ...]) -> list[Entry]:
        rows = self.call("list", parts)["entries"]
        return [Entry(tuple(rel), kind, size, mode, nlink) for rel, kind, size, mode, nlink in rows]

    def fetch(self, parts: tuple[str, ...], plan: Plan, sink: Sink) -> None:
        for entry in plan.files:
            sink.write(entry, self.read_file((*parts, *entry.parts)))

    def read_file(self, parts: tuple[str, ...]) -> Iterator[bytes]:
        """The content of the regular file ``parts``, chunk by chunk."""
        offset = 0
        while True:
            data = base64.b64decode(self.call("read", parts, offset=offset, length=self.chunk_bytes)["data"])
            if data:
                yield data
            if len(data) < self.chunk_bytes:  # a short read is the end: no request more to see it
                return
            offset += len(data)

    def prepare(self, parts: tuple[str, ...], kind: EntryKind) -> None:
        self.made = [tuple(p) for p in self.call("prepare", parts, kind=kind).get("made", [])]

    def write_tree(self, parts: tuple[str, ...], temp: str, plan: Plan, source: Source) -> None:
        base = (*parts[:-1], temp)
        for entry in plan.entries:
            target = (*base, *entry.parts)
            if entry.kind == "dir":
                self.call("mkdir", target, mode=safe_mode("dir", entry.mode))
                continue
            chunks = source.chunks(entry, self.chunk_bytes)
            try:  # one request for a file of one chunk: created with it, in its final mode (the owner may write)
                first = next(chunks, b"")
                self.call("create", target, data=base64.b64encode(first).decode("ascii"),
                          mode=safe_mode("file", entry.mode))
                self.write_file(target, chunks)
            finally:
                getattr(chunks, "close", lambda: None)()  # a generator's open file is closed now, not by a GC

    def write_file(self, parts: tuple[str, ...], chunks: Iterator[bytes]) -> None:
        """Append ``chunks`` to the new file ``parts``."""
        for data in chunks:
            self.call("append", parts, data=base64.b64encode(data).decode("ascii"))

    def commit(self, parts: tuple[str, ...], temp: str) -> None:
        self.call("rename", parts, temp=temp)

    def abort(self, parts: tuple[str, ...], temp: str, **how: Any) -> None:
        """Remove ``temp``, then the parents :meth:`prepare` made, while empty (``how``: the
        requests' options, docker's ``user``)."""
        try:
            self.request("remove", parts, temp=temp, **how)
            if self.made:
                self.request("rmdirs", parts, dirs=[list(p) for p in reversed(self.made)], **how)
        except Exception:  # noqa: BLE001 - abort never raises: the transfer's own error is what counts
            pass


class LocalFiles(RequestFiles):
    """A local kernel's files: requests run in this process, contents move by file descriptor."""

    chunk_bytes: ClassVar[int] = 1 << 20

    def request(self, op: str, parts: tuple[str, ...], **args: Any) -> dict[str, Any] | None:
        if "dirs" in args:
            args["dirs"] = [[host_name(n) for n in d] for d in args["dirs"]]
        try:
            answer = filetree.handle({"op": op, "wd": self.workdir, "parts": _host(parts), **args})
        except OSError as exc:
            return refused_answer(exc, parts)
        if "entries" in answer:  # this process's names, as a transfer names them (host_name)
            answer["entries"] = [[[kernel_name(n) for n in rel], *rest] for rel, *rest in answer["entries"]]
        return answer

    def read_file(self, parts: tuple[str, ...]) -> Iterator[bytes]:
        try:
            yield from filetree.iter_chunks(self.workdir, _host(parts), self.chunk_bytes)
        except OSError as exc:
            answer_of(refused_answer(exc, parts), "read")

    def write_file(self, parts: tuple[str, ...], chunks: Iterator[bytes]) -> None:
        for data in chunks:
            try:
                filetree.append_file(self.workdir, _host(parts), data)
            except OSError as exc:
                answer_of(refused_answer(exc, parts), "append")


def _host(parts: tuple[str, ...]) -> list[str]:
    return [host_name(n) for n in parts]


def refused_answer(exc: OSError, parts: tuple[str, ...]) -> dict[str, Any]:
    """The answer :func:`.filetree.main` gives for ``exc`` (a refusal of the entry it names)."""
    entry = exc.filename if isinstance(exc.filename, str) else "/".join(parts)
    return {"refused": {"entry": entry, "problem": exc.strerror or str(exc), "errno": exc.errno}}
