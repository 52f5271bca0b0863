"""What the leak check sees of a filecell transport (:meth:`Transport.leak_snapshot`).

* **Kernel dirs** it made under its root that outlived their kernel (a runner SIGKILLed whose
  dir could not be removed): through a local shell backend read here (``os.path.isdir``), else
  by the scan below. Each is forgotten once seen gone.
* **Kernel processes** where a backend that is not this machine's shell runs them (a container
  reached by ``docker exec``, a host by ssh): those of the kernels launched through this
  transport, and what their spawned runners said their cells left running
  (:meth:`Transport.note_leftovers`), by one execute of :data:`~..detached.HOST_PROCESSES_SCRIPT`,
  as the docker and ssh transports scan theirs. A local backend's kernels are in this machine's
  process table, which the host's own probes read.

Nothing is asked of a backend this transport never launched a kernel through.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from ...errors import TransportLostError
from ...procs import process_table
from ..detached import (HOST_PROCESSES_SCRIPT, KILL_IF_SAME_SCRIPT, SCAN_END_CODE, SCAN_END_LINE, disk_free_sh,
                        disk_words, parse_existing_dirs, parse_host_processes)
from . import scripts

if TYPE_CHECKING:
    from ...kernel.contract import Launched
    from .transport import FileCellTransport

log = logging.getLogger(__name__)

#: The one place a filecell transport's backend stands for (``MadeDirs``/``LeftBehind`` key).
HERE = "backend"
#: Seconds the scan's execute may take.
SCAN_TIMEOUT_S = 30.0
#: Seconds :func:`runner_frozen`'s execute may take (asked every 0.5 s while a reply is missing).
STATE_TIMEOUT_S = 2.0
#: Ended kernels whose ids a transport keeps for its scan at most, the newest (about 1 MB): a process
#: that runs no leak check kept one per kernel it ever started through a backend elsewhere.
ENDED_IDS_KEPT = 10_000


class KernelIds:
    """The kernels launched through a filecell transport whose processes its scan lists (it lists no
    other transport's kernels there). A running kernel's id stays; an ended one's stays while a scan
    may find what its cells left running, and goes once a scan finds none of its processes, or past
    the newest :data:`ENDED_IDS_KEPT` ended ones. Before, one id was kept per kernel ever launched,
    also through a local shell backend, whose kernels the scan never lists.

    :param ended_kept: ended kernels' ids kept at most.
    """

    def __init__(self, ended_kept: int = ENDED_IDS_KEPT) -> None:
        self._running: set[str] = set()
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._ended_kept = ended_kept
        self._lock = threading.Lock()

    def add(self, kernel_id: str) -> None:
        """Kernel ``kernel_id`` is being launched."""
        with self._lock:
            self._running.add(kernel_id)

    def ended(self, kernel_id: str, *, scanned: bool) -> None:
        """Kernel ``kernel_id`` ended (its cleanup ran); ``scanned``: a scan may still list what it left."""
        with self._lock:
            self._running.discard(kernel_id)
            if scanned:
                self._ended[kernel_id] = None
                while len(self._ended) > self._ended_kept:
                    self._ended.popitem(last=False)

    def running(self) -> list[str]:
        """The ids of the kernels launched and not ended (no cleanup ran for them yet)."""
        with self._lock:
            return sorted(self._running)

    def seen(self, listed: set[str]) -> None:
        """A scan listed processes of the kernels ``listed``: forget the ended ones it did not."""
        with self._lock:
            for kernel_id in [k for k in self._ended if k not in listed]:
                del self._ended[kernel_id]

    def __contains__(self, kernel_id: object) -> bool:
        with self._lock:
            return kernel_id in self._running or kernel_id in self._ended

    def __len__(self) -> int:
        with self._lock:
            return len(self._running) + len(self._ended)


def runner_frozen(transport: FileCellTransport, launched: Launched) -> bool:
    """:meth:`Transport.frozen` of a filecell runner: stopped (``T``; ``t``: traced, a debugger),
    read on the far side in one execute (a stopped runner's shutdown waited the whole 10 s for a
    reply it cannot send). ``False`` when it runs, is gone, or the backend cannot be asked."""
    if launched.pid is None or not launched.kernel_dir or launched.extra.get("gone"):
        return False
    try:
        _, out = transport.call(scripts.state_command(kdir=launched.kernel_dir, pid=launched.pid), STATE_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - cannot tell: not seen frozen
        log.debug("filecell state probe failed: %s", exc)
        return False
    return out.split()[-2:] in (["STATE", "T"], ["STATE", "t"])


def snapshot(transport: FileCellTransport, host_pid: int) -> dict[str, dict[str, str]]:
    """``{kind: {identity: description}}`` (see :meth:`Transport.leak_snapshot`).

    :raises TransportLostError: if the backend's scan failed or came back cut short (read as
        is, it would be a leak check passing blind).
    """
    dirs, left = transport.made_dirs.of(HERE), transport.left.of(HERE)
    rows: list[tuple[str, str, str, str]] = []
    if transport.runs_on_this_host:
        existing = [d for d in dirs if os.path.isdir(d)]
    elif len(transport.kernel_ids) or dirs or left:  # (every id may be forgotten, not a dir not yet seen gone)
        out = _scan(transport, [str(host_pid), *dirs, *left])
        rows, existing = parse_host_processes(out), parse_existing_dirs(out)
        transport.left.seen(HERE, left, rows)
        rows = [row for row in rows if row[2] in transport.kernel_ids]  # not another transport's kernels there
        transport.kernel_ids.seen({row[2] for row in rows})
        if f"{PROCESS_TABLE_TAG}{_process_table()}\n".encode() in out:  # a backend that runs here after all:
            rows = []  # the host's own probes list these processes (and would name them twice)
    else:
        return {}
    transport.made_dirs.seen(HERE, dirs, existing)
    where = repr(transport.backend)
    tag = f"filecell:{id(transport.backend)}"
    return {"remote kernel process": {f"{tag}:{pid}:{start}:{kid}": f"pid {pid} on {where} (kernel {kid}): {cmd}"
                                      for pid, start, kid, cmd in rows},
            "kernel dir": {f"{tag}:{d}": f"kernel dir {d} on {where}" for d in existing}}


#: The scan's first line: which process table it read (boot id and pid namespace).
PROCESS_TABLE_TAG = "table\t"
_TABLE_CODE = ("import os as _o\ntry:\n    print('table\\t' + open('/proc/sys/kernel/random/boot_id').read().strip() + "
               "' ' + _o.readlink('/proc/self/ns/pid'))\nexcept OSError:\n    pass\n")


def _process_table() -> str:
    """This machine's boot id and this process's pid namespace (:func:`~...procs.process_table`):
    a scan that prints the same read the process table the host's own probes read."""
    return process_table()


def _scan(transport: FileCellTransport, args: list[str]) -> bytes:
    python = transport.scan_python()
    code_text = _TABLE_CODE + HOST_PROCESSES_SCRIPT + SCAN_END_CODE
    cmd = " ".join(shlex.quote(a) for a in [python, "-I", "-S", "-c", code_text, *args])
    try:
        code, out = transport.call(f"exec {cmd}", SCAN_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - any backend failure: the scan did not run
        raise TransportLostError(f"the kernel scan through {transport.backend!r} failed: "
                                 f"{type(exc).__name__}: {exc}") from None
    data = out.encode() if isinstance(out, str) else bytes(out or b"")
    if code != 0 or not data.endswith(SCAN_END_LINE):
        raise TransportLostError(f"the kernel scan through {transport.backend!r} did not complete "
                                 f"(exit status {code}); output ends {data[-200:]!r}")
    return data[:-len(SCAN_END_LINE)]


def cleanup(transport: FileCellTransport, kind: str, identity: str) -> None:
    """End one reported thing: kill the process (if still the same one), remove the kernel dir
    (only one under the transport's root: :func:`.scripts.cleanup_command`). Never raises."""
    try:
        if kind == "remote kernel process":
            _, _, pid, start, _kid = identity.split(":")
            script = " ".join(shlex.quote(a) for a in [transport.scan_python(), "-I", "-S", "-c", KILL_IF_SAME_SCRIPT,
                                                       pid, start])
            transport.call(f"exec {script}", SCAN_TIMEOUT_S)
        elif kind == "kernel dir":
            path = identity.split(":", 2)[2]
            transport.call(scripts.cleanup_command(root=transport.root, kdir=path), SCAN_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - cleanup never raises
        log.warning("could not clean leaked %s %s: %s", kind, identity, exc)


def cleanup_located(transport: FileCellTransport, locator: dict[str, Any]) -> None:
    """Remove the kernel dir ``locator`` names (only one under the transport's root), unless its
    runner (``runner_pid``, checked by its socket path: a reused pid is not it) still runs. Never raises."""
    kdir, pid = locator.get("kernel_dir"), locator.get("runner_pid")
    if not isinstance(kdir, str) or not kdir.startswith(transport.root + "/k-") or "/" in kdir[len(transport.root) + 1:]:
        return
    try:
        if isinstance(pid, int) and "ALIVE" in transport.call(scripts.alive_command(kdir=kdir, pid=pid), SCAN_TIMEOUT_S)[1]:
            return  # the runner still runs: not gone
        transport.call(scripts.cleanup_command(root=transport.root, kdir=kdir), SCAN_TIMEOUT_S)
    except Exception as exc:  # noqa: BLE001 - cleanup never raises
        log.warning("could not remove filecell kernel dir %s: %s", kdir, exc)


def end_left_running(transport: FileCellTransport) -> None:
    """At the transport's close: kill the kernels launched through it that no shutdown ended, and
    remove their kernel dirs (a script that exits with a filecell kernel it never shut down left
    its runner and worker running, and its dir, for the runner's idle timer: 30 min). Never raises."""
    for kernel_id in transport.kernel_ids.running():
        try:
            transport.call(scripts.kill_kernel_command(kernel_id=kernel_id, python=transport.scan_python()),
                           SCAN_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - best effort at close: the runner's idle timer ends it
            log.warning("could not end filecell kernel %s at the transport's close: %s", kernel_id, exc)
            continue
        transport.kernel_ids.ended(kernel_id, scanned=not transport.runs_on_this_host)
    for kdir in transport.made_dirs.of(HERE):
        cleanup(transport, "kernel dir", f"filecell:{id(transport.backend)}:{kdir}")
        transport.made_dirs.removed(kdir)


def disk_note(transport: FileCellTransport, path: str) -> str:
    """``"; "`` and the backend's disk at ``path`` when it is (all but) full, else ``""`` (it has
    room, or the backend cannot say): a frame the full disk refused said only ``printf: I/O error``.
    One execute, on a failure's path only."""
    try:
        _, out = transport.call(disk_free_sh(path), SCAN_TIMEOUT_S)
    except Exception:  # noqa: BLE001 - cannot tell: the failure's own words stand
        return ""
    words = disk_words(str(out), path, "the backend's disk",
                       "Hint: free space there, or point root= at another file system")[1]
    return f"; {words}" if words else ""
