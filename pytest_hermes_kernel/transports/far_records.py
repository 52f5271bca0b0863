"""What a docker, ssh or filecell transport remembers of what it made where its kernels run, for its
leak probe: the kernel dirs (:class:`MadeDirs`) and the processes spawned runners said their cells
left running (:class:`LeftBehind`). Each forgets what a scan saw gone; neither grows with the number
of kernels a long-lived transport starts and ends.
"""

from __future__ import annotations

import threading

__all__ = ["LEFT_KEPT", "LeftBehind", "MadeDirs"]

#: Processes left behind a transport remembers per place at most, the newest (about 1 MB): a
#: process that runs no leak check forgets none of them otherwise.
LEFT_KEPT = 10_000


class LeftBehind:
    """Processes that spawned runners said, as they ended, their cells left running, per place (a container
    id, an ssh target), as :data:`~.detached.HOST_PROCESSES_SCRIPT` arguments (``left:<pid>:<start
    ticks>:<kernel id>``), each forgotten once a scan no longer finds it: what the leak probe lists beside
    the kernels' processes. Only the newest ``kept`` stay per place: one was kept for ever per process
    left, long after it ended, by a process that ran no leak check (a scan forgets the ones gone).

    :param kept: entries kept per place at most (default :data:`LEFT_KEPT`).
    """

    def __init__(self, kept: int = LEFT_KEPT) -> None:
        self._args: dict[str, dict[str, None]] = {}  # place -> its entries, the oldest first
        self._kept = kept
        self._lock = threading.Lock()

    def add(self, where: str, kernel_id: str, processes: list[tuple[int, int, str]]) -> None:
        with self._lock:
            args = self._args.setdefault(where, {})
            args.update((f"left:{pid}:{ticks}:{kernel_id}", None) for pid, ticks, _ in processes)
            for old in list(args)[:max(0, len(args) - self._kept)]:
                del args[old]

    def of(self, where: str) -> list[str]:
        """The scan arguments for ``where``, sorted."""
        with self._lock:
            return sorted(self._args.get(where, ()))

    def seen(self, where: str, asked: list[str], rows: list[tuple[str, str, str, str]]) -> None:
        """Forget the ``asked`` ones at ``where`` that the scan's ``rows`` do not list (and the place once it has none)."""
        found = {f"left:{pid}:{start}:{kid}" for pid, start, kid, _ in rows}
        with self._lock:
            args = self._args.get(where, {})
            for gone in set(asked) - found:
                args.pop(gone, None)
            if not args:
                self._args.pop(where, None)


class MadeDirs:
    """Kernel dirs this process made where its kernels run, per place (a container id, an ssh target), each
    forgotten once seen gone (kernel ids are never reused, nor their dirs' paths): what the leak probe checks
    for dirs left behind, without listing anyone else's."""

    def __init__(self) -> None:
        self._dirs: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def add(self, where: str, path: str) -> None:
        with self._lock:
            self._dirs.setdefault(where, set()).add(path)

    def of(self, where: str) -> list[str]:
        """The dirs made at ``where`` not yet seen gone, sorted."""
        with self._lock:
            return sorted(self._dirs.get(where, ()))

    def seen(self, where: str, asked: list[str], existing: list[str]) -> None:
        """Forget the ``asked`` dirs not among the ``existing`` ones (everywhere: a path names its kernel)."""
        self.removed(*(set(asked) - set(existing)))

    def removed(self, *paths: str) -> None:
        """Forget ``paths`` (seen gone, or removed by their kernel's cleanup: one was kept per kernel ever
        started, for a process that never ran the leak probe), and the places left with none."""
        with self._lock:
            self._dirs = {where: dirs - set(paths) for where, dirs in self._dirs.items() if dirs - set(paths)}
