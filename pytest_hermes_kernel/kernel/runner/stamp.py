"""What a process forked from a kernel server does to be a kernel of its own: its stdio as a
spawned runner has them, and its kernel id written over the server's placeholder in its initial
environment block (what ``/proc/<pid>/environ`` shows; see :mod:`.server`).
"""

from __future__ import annotations

import os

from .environ import KERNEL_ID_NAME, SERVER_KERNEL_ID

#: Name of the entry that fills the slot's rest after a kernel id.
SLOT_FILLER = "HERMES_KERNEL_SLOT"
#: Longest kernel id a forked kernel can carry (a uuid4 hex is 32).
MAX_KERNEL_ID_BYTES = len(SERVER_KERNEL_ID) - len(SLOT_FILLER) - 2
#: Fields of ``/proc/self/stat`` (0-based, after the command name) holding env_start, env_end.
_ENV_START_FIELD, _ENV_END_FIELD = 47, 48


def redirect_stdio(log: str | None) -> None:
    """stdin and stdout on ``/dev/null``, stderr on the kernel's log: as a spawned runner has them."""
    for target, path in ((0, os.devnull), (1, os.devnull), (2, log or os.devnull)):
        flags = os.O_RDONLY if target == 0 else os.O_WRONLY | os.O_CREAT | os.O_APPEND
        fd = os.open(path, flags, 0o600)
        if fd != target:
            os.dup2(fd, target)
            os.close(fd)


def _environ_region() -> tuple[int, bytes]:
    """Address of this process's initial environment block and its bytes."""
    with open("/proc/self/stat", "rb") as fh:
        stat = fh.read()
    fields = stat[stat.rfind(b")") + 2 :].split()
    start = int(fields[_ENV_START_FIELD])
    with open("/proc/self/environ", "rb") as fh:
        block = fh.read()
    return start, block


def _slot_offset(block: bytes) -> int:
    """Offset of ``HERMES_KERNEL_ID=<placeholder>`` in ``block``, or -1."""
    entry = f"{KERNEL_ID_NAME}={SERVER_KERNEL_ID}".encode()
    if block.startswith(entry + b"\0"):
        return 0
    at = block.find(b"\0" + entry + b"\0")
    return at + 1 if at >= 0 else -1


def stamp_refusal() -> str | None:
    """Why kernels cannot be stamped here (``None``: they can): no placeholder, or no writable memory."""
    try:
        _, block = _environ_region()
        if _slot_offset(block) < 0:
            return f"the server was started without the {KERNEL_ID_NAME} placeholder"
        with open("/proc/self/mem", "r+b", buffering=0):
            pass
    except (OSError, ValueError, IndexError) as exc:
        return f"a forked kernel could not mark its environment (/proc/self/mem): {exc}"
    return None


def id_refusal(kernel_id: object) -> str | None:
    if not isinstance(kernel_id, str) or not kernel_id or len(kernel_id.encode()) > MAX_KERNEL_ID_BYTES:
        return f"kernel id {kernel_id!r} does not fit the server's slot ({MAX_KERNEL_ID_BYTES} bytes)"
    return None


def stamp_kernel_id(kernel_id: str) -> None:
    """Write ``HERMES_KERNEL_ID=<kernel_id>`` over the placeholder in this process's initial
    environment block (what ``/proc/<pid>/environ`` shows); the rest of the slot becomes a
    ``HERMES_KERNEL_SLOT=...`` entry (never a double NUL: readers stop at one).

    :raises OSError: if the block cannot be written or does not read back as written.
    """
    start, block = _environ_region()
    at = _slot_offset(block)
    if at < 0:
        raise OSError(f"no {KERNEL_ID_NAME} placeholder in this process's environment")
    width = len(KERNEL_ID_NAME) + 1 + len(SERVER_KERNEL_ID)
    entry = f"{KERNEL_ID_NAME}={kernel_id}".encode()
    filler = (SLOT_FILLER + "=").encode()
    data = entry + b"\0" + filler.ljust(width - len(entry) - 1, b".")
    if len(data) != width:
        raise OSError(f"kernel id {kernel_id!r} does not fit the slot")
    with open("/proc/self/mem", "r+b", buffering=0) as mem:
        mem.seek(start + at)
        mem.write(data)
    if entry + b"\0" not in _environ_region()[1]:
        raise OSError("the kernel id did not read back from /proc/self/environ")
