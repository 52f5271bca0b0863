"""A memory cgroup of its own for a local kernel, so an OOM kill can be told from a SIGKILL.

cgroup v1 (``/sys/fs/cgroup/memory``: ``memory.limit_in_bytes``, ``memory.oom_control``'s
``oom_kill``) and v2 (``memory.max``, ``memory.events``'s ``oom_kill``). The kernel runner's
supervisor moves each worker it forks into the group and reads the counter before and after a
death: the classification never rests on exit code 137 alone.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import time
import uuid
from dataclasses import dataclass

from ..errors import TransportUnavailableError
from ..procs import start_ticks

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"
#: Seconds :meth:`MemoryCgroup.remove` waits for the processes it killed to leave the group (a
#: SIGKILLed process exits within milliseconds; only one in uninterruptible sleep takes longer).
REMOVE_WAIT_S = 5.0
#: Poll interval (seconds) while it waits.
REMOVE_POLL_S = 0.01


@dataclass
class MemoryCgroup:
    """A created memory cgroup; :meth:`remove` it once its processes are gone."""

    path: str
    version: int
    limit_bytes: int

    @property
    def procs_file(self) -> str:
        """The group's ``cgroup.procs``: a kernel's ``cgroup_procs=`` option."""
        return os.path.join(self.path, "cgroup.procs")

    @property
    def oom_counter_file(self) -> str:
        """The file whose ``oom_kill`` counter tells an OOM kill: a kernel's ``oom_counter_file=`` option."""
        return os.path.join(self.path, "memory.oom_control" if self.version == 1 else "memory.events")

    def oom_kills(self) -> int | None:
        """OOM kills in the group so far; ``None`` when the counter cannot be read."""
        from ..kernel.runner.procfs import read_oom_kills

        return read_oom_kills(self.oom_counter_file)

    def holds(self, pid: int) -> bool | None:
        """Whether process ``pid`` is in the group (``cgroup.procs``); ``None`` when it cannot be read."""
        try:
            with open(self.procs_file, encoding="ascii") as fh:
                return str(pid) in fh.read().split()
        except OSError:
            return None

    def remove(self, wait: float = REMOVE_WAIT_S) -> None:
        """Remove the group and the groups a cell made below it, after killing what is left in
        them; never raises.

        A killed process leaves its group only once it has exited: the removal is tried again
        until the groups are empty, for up to ``wait`` seconds (a process a cell left in it, such as
        a ``setsid`` daemon, kept the group on the machine when the removal came at once).

        :param wait: seconds to wait for the killed processes to leave the groups.
        """
        deadline = time.monotonic() + wait
        while True:
            self._kill_members()
            try:
                for path in [path for path, _, _ in os.walk(self.path, topdown=False)]:  # the ones below first
                    os.rmdir(path)
            except OSError as exc:
                if exc.errno == errno.EBUSY and time.monotonic() < deadline:
                    time.sleep(REMOVE_POLL_S)
                    continue
            return

    def _kill_members(self) -> None:
        """SIGKILL every process in the group and below it (``cgroup.procs``); those gone meanwhile are skipped."""
        for path, _, _ in os.walk(self.path):
            try:
                with open(os.path.join(path, "cgroup.procs"), encoding="ascii") as fh:
                    pids = fh.read().split()
            except OSError:
                continue
            for pid in pids:
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
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


def own_cgroup(version: int, proc_file: str = "/proc/self/cgroup") -> str | None:
    """This process's own memory cgroup (v1) or unified cgroup (v2), relative to its hierarchy's
    root (``/ci/runner``), from ``/proc/self/cgroup``; ``None`` when it is the root or unknown."""
    try:
        with open(proc_file, encoding="ascii") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if (version == 1 and "memory" in controllers.split(",")) or (version == 2 and _ == "0" and not controllers):
            return path if path not in ("", "/") else None
    return None


def cgroup_mounts(mountinfo: str = "/proc/self/mountinfo") -> list[tuple[str, str, str, str]]:
    """Each cgroup file system mounted in this process's view: ``(fstype, super options, root,
    mount point)`` from ``mountinfo`` (``cgroup`` for v1, ``cgroup2``); ``root`` is the cgroup
    the mount shows at its mount point (a container's own, ``/docker/ID`` or ``/``), relative to
    this process's cgroup namespace like the paths of ``/proc/PID/cgroup``. (A space in a path is
    mountinfo's ``\\040``; the rarer escapes are left as they are.)"""
    try:
        with open(mountinfo, encoding="utf-8", errors="surrogateescape") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return []
    mounts = []
    for line in lines:
        left, _, right = line.partition(" - ")
        f, fs = left.split(), right.split()
        if len(f) > 4 and len(fs) > 2 and fs[0] in ("cgroup", "cgroup2"):
            mounts.append((fs[0], fs[2], f[3].replace("\\040", " "), f[4].replace("\\040", " ")))
    return mounts


def cgroup_dir(path: str, mounts: list[tuple[str, str, str, str]], v1_controller: str | None) -> str | None:
    """Where the cgroup ``path`` (as ``/proc/PID/cgroup`` names it) is in this file system: below
    the mount point of a mount of its hierarchy (v1: one with ``v1_controller``; ``None``: v2)
    whose root holds it and no later mount hides; ``None`` where no mount shows it (a container
    sees only its own)."""
    for n, (fstype, options, root, point) in enumerate(mounts):
        if fstype != ("cgroup" if v1_controller else "cgroup2") or (
                v1_controller and v1_controller not in options.split(",")) or any(
                later[3] == point for later in mounts[n + 1:]):
            continue  # another hierarchy's, or hidden by a later mount on its mount point
        root = root.rstrip("/")
        if path == (root or "/"):
            return point
        if path.startswith(root + "/"):
            return point.rstrip("/") + path[len(root):].rstrip("/")
    return None


def _parents(root: str, version: int) -> list[str]:
    """Where a group may be made: the hierarchy's root (root may write there), then this process's
    own cgroup (an ordinary user's delegated one, which it may write: there it was refused) and, on
    v2, that cgroup's ancestors, nearest first: a v2 cgroup that holds processes cannot give its
    children the memory controller, so a delegated user runs pytest in a leaf below its cgroup."""
    own = (own_cgroup(version) or "").strip("/").split("/")
    mounts = [m for m in cgroup_mounts() if m[3].rstrip("/") == root.rstrip("/")]
    nearest = []
    for n in range(len(own), 0, -1) if own[0] else ():
        # where the hierarchy's mount at root shows it (a container's mount shows its own cgroup at
        # root and nothing above it: /docker/ID was looked for below it), else by its path below root
        path = (cgroup_dir("/" + "/".join(own[:n]), mounts, "memory" if version == 1 else None) if mounts
                else os.path.join(root, *own[:n]))
        if path is not None and path.rstrip("/") != root.rstrip("/") and path not in nearest:
            nearest.append(path)
    return [root] + (nearest if version == 2 else nearest[:1])


def writable_parent() -> str | None:
    """Where this process could make a memory cgroup for ``hermes_oom`` (a parent it may write and,
    on v2, one that delegates the memory controller to its children), else ``None``: what
    ``hermes-kernel doctor`` reports, by the checks :func:`create_memory_cgroup` makes."""
    for root, version in ((V1_ROOT, 1), (V2_ROOT, 2)):
        if os.path.exists(os.path.join(root, "memory.limit_in_bytes" if version == 1 else "cgroup.controllers")):
            return next((p for p in _parents(root, version)
                         if os.access(p, os.W_OK) and (version == 1 or _delegates_memory(p))), None)
    return None


def _delegates_memory(parent: str) -> bool:
    """Whether a v2 cgroup gives its children the memory controller (``cgroup.subtree_control``)."""
    try:
        with open(os.path.join(parent, "cgroup.subtree_control"), encoding="ascii") as fh:
            return "memory" in fh.read().split()
    except OSError:
        return False


_HINT = "Hint: run as root, or run pytest in a memory cgroup of this user's own (a delegated one)"
#: The hint where the hierarchy is mounted read-only (EROFS): root or not, nothing is made there.
_READ_ONLY_HINT = ("The cgroup file system is mounted read-only here, as a container engine mounts a container's "
                   "unless it is privileged (root in it cannot write it either). Hint: run the job's container "
                   "privileged, or test OOM on the docker leg (--hermes-transport=docker), whose containers have "
                   "a memory limit and counter of their own")


def _hint(errors: list[OSError], root: str) -> str:
    """The read-only hint where every try met a read-only file system, or ``root``'s mount is one
    (on v2 a container's cgroup, which delegates nothing, was refused before any try), else the hint."""
    try:
        read_only = bool(os.statvfs(root).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    return _READ_ONLY_HINT if read_only or (errors and all(e.errno == errno.EROFS for e in errors)) else _HINT


#: The name of a memory cgroup :func:`create_memory_cgroup` makes: ``hermes-kernel-`` its creator's pid
#: namespace (inode), pid and start time (clock ticks since boot), then a random part.
_NAME = re.compile(r"hermes-kernel-(\d+)-(\d+)-(\d+)-[0-9a-f]+")


def _pid_namespace() -> str:
    """This process's pid namespace inode (``0`` where ``/proc`` cannot say)."""
    try:
        return "".join(c for c in os.readlink("/proc/self/ns/pid") if c.isdigit()) or "0"
    except OSError:
        return "0"


def _cgroup_name() -> str:
    return f"hermes-kernel-{_pid_namespace()}-{os.getpid()}-{start_ticks(os.getpid()) or 0}-{uuid.uuid4().hex[:8]}"


def sweep_leftover_cgroups(parent: str) -> list[str]:
    """Remove the empty memory cgroups in ``parent`` made by a process of this pid namespace that
    is gone (a run SIGKILLed, an xdist worker that crashed: its cleanup never ran, and each left its
    group on the machine for good); one a process is still in (a filecell kernel outlives its host
    for its idle timer) is left for a later sweep: nothing is killed. Never raises.

    :returns: the paths removed.
    """
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    ours, removed = _pid_namespace(), []
    for name in names:
        made = _NAME.fullmatch(name)
        if made is None or made[1] != ours or ours == "0" or start_ticks(int(made[2])) == int(made[3]):
            continue  # not ours to judge, or its creator lives
        try:
            os.rmdir(os.path.join(parent, name))
        except OSError:
            continue
        removed.append(os.path.join(parent, name))
    return removed


def create_memory_cgroup(limit_bytes: int, name: str | None = None) -> MemoryCgroup:
    """Create a memory cgroup limited to ``limit_bytes`` (swap included where it can be set): at
    the hierarchy's root, else inside this process's own cgroup (:func:`_parents`). The groups
    that gone runs left in that parent are removed first (:func:`sweep_leftover_cgroups`).

    :raises TransportUnavailableError: if this machine does not let us create one (no cgroup
        mount, not writable, v2 without the memory controller delegated, no OOM-kill counter);
        the message says why.
    """
    name = name or _cgroup_name()
    if os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        refused, errors = [], []
        for parent in _parents(V1_ROOT, 1):
            path = os.path.join(parent, name)
            try:
                os.mkdir(path)
            except OSError as exc:
                refused.append(f"{path}: {exc}")
                errors.append(exc)
                continue
            sweep_leftover_cgroups(parent)
            # (no swap accounting: the limit applies to RAM only)
            return _limited(path, 1, limit_bytes, ("memory.limit_in_bytes", str(limit_bytes)),
                            ("memory.memsw.limit_in_bytes", str(limit_bytes)), f". {_HINT}")
        raise TransportUnavailableError(f"cannot create a v1 memory cgroup at {'; nor at '.join(refused)}. "
                                        f"{_hint(errors, V1_ROOT)}")
    if os.path.exists(os.path.join(V2_ROOT, "cgroup.controllers")):
        refused, errors = [], []
        for parent in _parents(V2_ROOT, 2):
            if not _delegates_memory(parent):
                refused.append(f"cgroup v2 here does not delegate the memory controller (cgroup.subtree_control lacks "
                               f"'memory') at {parent}")
                continue
            path = os.path.join(parent, name)
            try:
                os.mkdir(path)
            except OSError as exc:
                refused.append(f"cannot create a v2 memory cgroup at {path}: {exc}")
                errors.append(exc)
                continue
            sweep_leftover_cgroups(parent)
            return _limited(path, 2, limit_bytes, ("memory.max", str(limit_bytes)), ("memory.swap.max", "0"), "")
        raise TransportUnavailableError("; nor: ".join(refused) + f". {_hint(errors, V2_ROOT)}")
    raise TransportUnavailableError("no memory cgroup hierarchy is mounted at /sys/fs/cgroup")


def _limited(path: str, version: int, limit_bytes: int, limit: tuple[str, str], swap: tuple[str, str],
             hint: str) -> MemoryCgroup:
    """Set the limit of the cgroup just made at ``path`` (``limit``: file, value), and its swap's
    where the machine accounts swap; the cgroup is removed if its limit cannot be set.

    :raises TransportUnavailableError: if the limit cannot be written (``hint`` ends the message).
    """
    try:
        _write(os.path.join(path, limit[0]), limit[1])
    except OSError as exc:
        MemoryCgroup(path, version, limit_bytes).remove()
        raise TransportUnavailableError(f"cannot create a v{version} memory cgroup at {path}: {exc}{hint}") from None
    try:
        _write(os.path.join(path, swap[0]), swap[1])
    except OSError:
        pass  # no swap accounting
    return _counting(MemoryCgroup(path, version, limit_bytes))
