"""A memory cgroup of its own for a local kernel, so an OOM kill can be told from a SIGKILL.

cgroup v1 (``/sys/fs/cgroup/memory``: ``memory.limit_in_bytes``, ``memory.oom_control``'s
``oom_kill``) and v2 (``memory.max``, ``memory.events``'s ``oom_kill``). The kernel runner's
supervisor moves each worker it forks into the group and reads the counter before and after a
death: the classification never rests on exit code 137 alone.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

from ..errors import TransportUnavailableError

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"


@dataclass
class MemoryCgroup:
    """A created memory cgroup; :meth:`remove` it once its processes are gone."""

    path: str
    version: int
    limit_bytes: int

    @property
    def procs_file(self) -> str:
        return os.path.join(self.path, "cgroup.procs")

    @property
    def oom_counter_file(self) -> str:
        return os.path.join(self.path, "memory.oom_control" if self.version == 1 else "memory.events")

    def oom_kills(self) -> int | None:
        from ..kernel.runner.procfs import read_oom_kills

        return read_oom_kills(self.oom_counter_file)

    def remove(self) -> None:
        """Remove the group (after killing what is left in it); never raises."""
        try:
            with open(self.procs_file, encoding="ascii") as fh:
                for line in fh:
                    try:
                        os.kill(int(line), 9)
                    except (ProcessLookupError, ValueError):
                        pass
        except OSError:
            pass
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def _write(path: str, value: str) -> None:
    with open(path, "w", encoding="ascii") as fh:
        fh.write(value)


def _counting(cg: MemoryCgroup) -> MemoryCgroup:
    """``cg``, once its OOM-kill counter reads (Linux before 4.13 has no ``oom_kill`` line: the
    kernel ran in the group and its OOM kill was reported as a plain death, ``oom_killed=False``).

    :raises TransportUnavailableError: (the group removed) if it has no counter.
    """
    if cg.oom_kills() is None:
        cg.remove()
        raise TransportUnavailableError(f"no oom_kill counter in the memory cgroup at {cg.oom_counter_file}: an OOM "
                                        "kill could not be told from another SIGKILL (Linux counts them from 4.13)")
    return cg


def create_memory_cgroup(limit_bytes: int, name: str | None = None) -> MemoryCgroup:
    """Create a memory cgroup limited to ``limit_bytes`` (swap included where it can be set).

    :raises TransportUnavailableError: if this machine does not let us create one (no cgroup
        mount, not writable, v2 without the memory controller delegated, no OOM-kill counter);
        the message says why.
    """
    name = name or f"hermes-kernel-{uuid.uuid4().hex[:12]}"
    if os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        path = os.path.join(V1_ROOT, name)
        try:
            os.mkdir(path)
            _write(os.path.join(path, "memory.limit_in_bytes"), str(limit_bytes))
        except OSError as exc:
            raise TransportUnavailableError(f"cannot create a v1 memory cgroup at {path}: {exc}. "
                                            "Hint: run as root or delegate the memory controller") from None
        try:
            _write(os.path.join(path, "memory.memsw.limit_in_bytes"), str(limit_bytes))
        except OSError:
            pass  # no swap accounting: the limit applies to RAM only
        return _counting(MemoryCgroup(path, 1, limit_bytes))
    controllers = os.path.join(V2_ROOT, "cgroup.controllers")
    if os.path.exists(controllers):
        with open(os.path.join(V2_ROOT, "cgroup.subtree_control"), encoding="ascii") as fh:
            if "memory" not in fh.read().split():
                raise TransportUnavailableError("cgroup v2 here does not delegate the memory controller "
                                                "(cgroup.subtree_control lacks 'memory')")
        path = os.path.join(V2_ROOT, name)
        try:
            os.mkdir(path)
            _write(os.path.join(path, "memory.max"), str(limit_bytes))
            try:
                _write(os.path.join(path, "memory.swap.max"), "0")
            except OSError:
                pass
        except OSError as exc:
            raise TransportUnavailableError(f"cannot create a v2 memory cgroup at {path}: {exc}") from None
        return _counting(MemoryCgroup(path, 2, limit_bytes))
    raise TransportUnavailableError("no memory cgroup hierarchy is mounted at /sys/fs/cgroup")
