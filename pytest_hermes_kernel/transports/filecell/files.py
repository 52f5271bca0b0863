"""An execute-only kernel's files: :mod:`..filetree` requests through the backend's ``execute``.

Each request is one command, ``python3 -I -c <filetree source>`` with the JSON request in a
quoted here-document (stdin; never expanded by the shell), that prints one ``HERMES-FILES``
line. File contents travel base64-encoded, :data:`CHUNK_BYTES` a command in both directions, so
a command stays well under :data:`~.scripts.MAX_COMMAND_BYTES` (the shipped source is ~14 KB)
and an output under 100 KB; a transfer is bounded like any other
(``KernelOptions.max_transfer_bytes``), and costs about one command per file and per 48 KiB.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any, ClassVar

from ...errors import FileTransferError
from .. import filetree
from ..files import RequestFiles

if TYPE_CHECKING:
    from .transport import FileCellTransport

__all__ = ["CHUNK_BYTES", "FileCellFiles"]

#: Bytes of file content per command (64 KiB as base64).
CHUNK_BYTES = 48 * 1024
#: Seconds one request may take.
REQUEST_TIMEOUT_S = 60.0
#: Ends the here-document that carries the request (base64 and JSON of plain names never hold it).
_END = "HERMES_FILES_REQUEST_END"


class FileCellFiles(RequestFiles):
    """The files of one filecell kernel under its working dir.

    :param transport: the filecell transport (its backend and status check).
    :param workdir: the working dir where the backend runs commands.
    :param python: the interpreter there.
    """

    chunk_bytes: ClassVar[int] = CHUNK_BYTES

    def __init__(self, transport: FileCellTransport, workdir: str, python: str) -> None:
        super().__init__(workdir)
        self.transport = transport
        self.python = python

    def request(self, op: str, parts: tuple[str, ...], **args: Any) -> dict[str, Any] | None:
        request = json.dumps({"op": op, "wd": self.workdir, "parts": list(parts), **args})
        if _END in request:  # a name holding the terminator would end the here-document early
            return {"refused": {"entry": "/".join(parts), "problem": "has a name the shell cannot carry"}}
        cmd = (f"{shlex.quote(self.python)} -I -c {shlex.quote(filetree.shipped_source())} <<'{_END}'\n"
               f"{request}\n{_END}\n")
        what = f"{op} {'/'.join(parts)}"
        try:
            code, out = self.transport.run_command(cmd, REQUEST_TIMEOUT_S)
        except Exception as exc:  # the backend's own error, a call that never returned, an unknown status
            raise FileTransferError(f"{what} through {self.transport.backend!r} failed: {type(exc).__name__}: {exc}",
                                    path="/".join(parts), problem="the backend failed") from exc
        try:
            answer = filetree.parse_result(out)
        except ValueError:  # the answer line is there but cut short or damaged
            raise FileTransferError(
                f"the answer to {what} through {self.transport.backend!r} was cut short or damaged: the backend "
                f"returned {len(out.encode())} bytes of output, ending {out[-80:]!r}\nHint: an execute backend must "
                "return a command's whole output (no cap, no rewriting)", path="/".join(parts),
                problem="damaged answer") from None
        if answer is None:
            raise FileTransferError(f"the kernel's side gave no answer to {what} through {self.transport.backend!r} "
                                    f"(exit {code}): {out.strip()[-300:] or '<no output>'}", path="/".join(parts),
                                    problem="no answer")
        return answer
