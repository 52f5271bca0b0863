"""What the supervisor reads from ``/proc`` and ``/sys/fs/cgroup`` (Linux; no-ops elsewhere).

* :func:`configured_oom_file`, :func:`memory_cgroup_oom_file`, :func:`read_oom_kills`,
  :func:`oom_counter_problem` and :class:`OomCounter`: a death is an OOM kill only when
  the kernel's own memory cgroup counted one (DESIGN.md section 8: never exit 137 alone). The
  host's OOM fault (``faults/cgroup.py``) reads the counter with the same function.
* :func:`cgroup_strangers`: whether a kernel's memory cgroup holds another session's processes too.
* :func:`kill_session_strays`: between workers, whatever is left in the supervisor's session.
* :func:`close_fds_except`: a fresh worker holds none of the supervisor's fds.
* :func:`signal_if`: a signal to a pid read from ``/proc`` (B29: it may be reused meanwhile).
* :func:`become_subreaper` and :func:`adopted_children`: what a kernel's cells leave behind in a
  session of their own becomes this process's child, and is reported when the kernel ends.
"""

from __future__ import annotations

import os
import signal
import traceback

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable

PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")


def memory_cgroup_oom_file(pid: int, root: str = "/sys/fs/cgroup", proc: str = "/proc") -> str | None:
    """Path of the OOM-kill counter of ``pid``'s memory cgroup (v1 or v2), or ``None``.

    The cgroup's own dir below the hierarchy's mount (``root``; on v2, else its nearest ancestor's
    with ``memory.events``), else the mount's top: a
    container (docker, podman, a Kubernetes pod; marker files or not, a cgroup namespace of its
    own or the host's) sees its own cgroup there, not at its path on the host (``/docker/ID``).
    The hierarchy's real root does not count (v1: it holds ``release_agent``; v2 has no
    ``memory.events`` there): a machine-wide counter, no memory limit of the kernel's own.

    :param pid: the process whose cgroup is read (the worker).
    """
    try:
        with open(f"{proc}/{pid}/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    for line in lines:
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        v1 = "memory" in controllers.split(",")
        if not v1 and (hierarchy != "0" or controllers):
            continue
        mount = root + "/memory" if v1 else root
        for where in _counter_dirs(mount, path.rstrip("/"), v1):
            counter = os.path.join(where, "memory.oom_control" if v1 else "memory.events")
            if os.path.exists(counter) and not os.path.exists(os.path.join(where, "release_agent")):
                return counter
    return None


def _counter_dirs(mount: str, path: str, v1: bool) -> list[str]:
    """Where a cgroup's counter may be, nearest first: its own dir, on v2 each ancestor's below the
    mount (a v2 cgroup without the memory controller has no ``memory.events``: the limit and the
    count are its nearest ancestor's with one; that was read as no counter, an OOM kill as a plain
    SIGKILL), then the mount's top."""
    dirs = [mount + path]
    while not v1 and path.count("/") > 1:
        path = path.rsplit("/", 1)[0]
        dirs.append(mount + path)
    return dirs + [mount]


def configured_oom_file(config: dict) -> str | None:
    """The OOM-kill counter a kernel's config names: ``oom_counter_file``, else the counter beside
    ``cgroup_procs`` (``memory.events`` on v2, ``memory.oom_control`` on v1: the cgroup its worker
    joins; on v2 a cgroup without the memory controller has none: its nearest ancestor's with
    one), else ``None`` (the supervisor looks up the worker's own cgroup).

    Read from the config, not from the worker: the worker joins ``cgroup_procs`` after its fork
    (a spare's after its claim), and a lookup that ran first found the cgroup it left, so an OOM
    kill read as a plain SIGKILL or not, by timing.
    """
    path = config.get("oom_counter_file")
    if path is not None or not config.get("cgroup_procs"):
        return path
    where = os.path.dirname(config["cgroup_procs"])
    if os.path.exists(os.path.join(where, "memory.oom_control")):
        return os.path.join(where, "memory.oom_control")
    while os.path.exists(os.path.join(where, "cgroup.procs")) and where != os.path.dirname(where):
        if os.path.exists(os.path.join(where, "memory.events")):  # v2: its own, else its nearest ancestor's
            return os.path.join(where, "memory.events")
        where = os.path.dirname(where)
    return None  # not a memory cgroup: the join leaves the worker's memory cgroup as it was


def read_oom_kills(path: str | None) -> int | None:
    """The ``oom_kill`` count in a cgroup's ``memory.oom_control`` (v1) or ``memory.events`` (v2).

    :param path: the counter file; ``None`` or ``""`` when there is none.
    :returns: the count, or ``None`` if the file is missing or has no ``oom_kill`` line.
    """
    if not path:
        return None
    try:
        with open(path, "rb") as fh:
            return _oom_kills_in(fh.read())
    except OSError:
        return None


def oom_counter_problem(path: str) -> str | None:
    """Why ``path`` gives no ``oom_kill`` count (the error reading it: ``Permission denied``, ``Is
    a directory``, ...; or that it has no ``oom_kill`` line), else ``None``."""
    try:
        with open(path, "rb") as fh:
            count = _oom_kills_in(fh.read())
    except OSError as exc:
        return exc.strerror or str(exc)
    return None if count is not None else "it has no oom_kill line"


def _oom_kills_in(text: bytes) -> int | None:
    for line in text.splitlines():
        name, _, value = line.partition(b" ")
        if name == b"oom_kill":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class OomCounter:
    """:func:`read_oom_kills` of one file through a descriptor held open (close-on-exec).

    A ``pread`` of a held cgroup file costs ~3 us against ~37 us for open, read and close
    (measured on a 2-core Debian 12 host, cgroup v1): cheap enough to read at every cell start,
    so that a count taken at a cell's start is never an earlier cell's.

    On v1 (``memory.oom_control``) the kernel counts an OOM kill in the victim's own group only:
    the kills in the groups below this one (a cell made one and moved a process, or the worker,
    there) are added, each group's rise since the read before (one ``fstat`` of the held dir
    says whether there are any: its link count). v2's ``memory.events`` counts them itself.

    :param path: the counter file; ``None`` or ``""``: :meth:`read` is always ``None``.
    """

    def __init__(self, path: str | None) -> None:
        self.path = path
        self._fd: int | None = None
        self._dir: int | None = None  # (v1) the group's dir
        self._below: dict[str, int] | None = None  # (v1) each group below's count at the last read
        self._added = 0  # (v1) the kills counted below since the first read

    def read(self) -> int | None:
        """The count now, or ``None`` if the file cannot be read (opened again next time)."""
        if not self.path:
            return None
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
            count = _oom_kills_in(os.pread(self._fd, 4096, 0))
        except OSError:
            self.close()
            return None
        if count is None or os.path.basename(self.path) != "memory.oom_control":
            return count
        return count + self._kills_below(os.path.dirname(self.path))

    def _kills_below(self, where: str) -> int:
        """The kills counted in the groups below ``where`` since the first read (a group removed
        meanwhile keeps what it added; one made since counts from 0)."""
        try:
            if self._dir is None:
                self._dir = os.open(where, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            below = os.fstat(self._dir).st_nlink > 2  # (a dir's link count: 2, and 1 per dir in it)
        except OSError:
            below = False
        counts = {path: read_oom_kills(path + "/memory.oom_control") or 0
                  for path, _, _ in (os.walk(where) if below else ()) if path != where}
        if self._below is not None:
            self._added += sum(max(0, n - self._below.get(path, 0)) for path, n in counts.items())
        self._below = counts
        return self._added

    def close(self) -> None:
        for fd in (self._fd, self._dir):
            if fd is not None:
                os.close(fd)
        self._fd = self._dir = None


def cgroup_strangers(where: str) -> list[int]:
    """The processes in the cgroup at ``where`` (and the cgroups below it) outside this process's
    session (a supervisor leads its own: its workers and what their cells started are in it, but
    for a ``setsid`` daemon), read from each ``cgroup.procs``; one gone meanwhile is none.

    Another kernel's worker in a memory cgroup named by a kernel's config makes its OOM counter
    a shared one: an OOM kill there is not told as this kernel's cell's.
    """
    sid, pids = os.getsid(0), []
    for path, _, _ in os.walk(where):
        try:
            with open(os.path.join(path, "cgroup.procs"), "rb") as fh:
                pids += [int(pid) for pid in fh.read().split()]
        except (OSError, ValueError):
            continue
    return [pid for pid in pids if (stat := _stat_of(str(pid))) and not _in_session(stat, sid)]


def _session_of(stat: bytes) -> int:
    return int(stat[stat.rfind(b")") + 2 :].split()[3])


def kill_session_strays() -> None:
    """SIGKILL every other process of the session this supervisor leads.

    Between workers, everything left in the session was started by a cell, including children
    that moved to a process group of their own (``process_group=0``), which the worker's
    ``killpg`` misses. Only a ``setsid`` daemon has left the session: that is how a cell opts out.
    Does nothing unless the supervisor leads its session, or where there is no ``/proc``.
    """
    me = os.getpid()
    try:
        if os.getsid(0) != me:
            return
        names = os.listdir("/proc")
    except OSError:
        return
    for name in names:  # a first look in 3 system calls a process; the pidfd and a second look for ours only
        if name.isdigit() and int(name) != me and _in_session(_stat_of(name), me):  # (each stray's pid: 130
            signal_if(int(name), signal.SIGKILL, lambda stat: _session_of(stat) == me)  # processes were 1.5 ms)


def _stat_of(pid: str) -> bytes:
    """``/proc/<pid>/stat`` by ``os.open``/``os.read`` (a Python file object costs 7 system calls); ``b""`` if gone."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return b""
    try:
        return os.read(fd, 4096)
    except OSError:
        return b""
    finally:
        os.close(fd)


def _in_session(stat: bytes, sid: int) -> bool:
    try:
        return _session_of(stat) == sid
    except (IndexError, ValueError):
        return False


def signal_if(pid: int, sig: int, still: Callable[[bytes], bool]) -> None:
    """Send ``sig`` to ``pid`` if ``still(its stat)``, by a pidfd opened before the check (else just after it)."""
    fd = None
    try:
        if PIDFD:
            fd = os.pidfd_open(pid)
        with open(f"/proc/{pid}/stat", "rb") as fh:
            if still(fh.read()):
                signal.pidfd_send_signal(fd, sig) if fd else os.kill(pid, sig)
    except (OSError, ValueError, IndexError):
        pass
    finally:
        if fd is not None:
            os.close(fd)


def _open_fds() -> Iterable[int]:
    try:
        return [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:
        return range(3, 1024)


def close_fds_except(keep: Collection[int]) -> None:
    """Close every fd of this process but ``keep``.

    A worker must hold nothing of the supervisor's (above all not the host's channel, or the
    host would never see EOF when the supervisor ends).
    """
    for fd in _open_fds():
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


#: The pid of this process once it is a subreaper (:func:`become_subreaper`); a fork of it (a
#: kernel a server forked) is none: the flag is not inherited.
_SUBREAPER_PID: int | None = None


def become_subreaper() -> None:
    """Adopt what this process's kernels leave behind (``PR_SET_CHILD_SUBREAPER``; a no-op where
    it fails): a process a cell started in a session of its own, and with an environment of its
    own, outlives its worker as a child of this process, not of init. A kernel server is one (its
    kernels' leftovers stay its children: the leak probes find them among the test process's
    descendants, or remotely as unmarked children of a kernel server, ``HOST_PROCESSES_SCRIPT``);
    a spawned runner is one (it reports them in its ``bye``: :func:`adopted_children`). Not
    inherited by a fork: a forked kernel's own tree is unchanged."""
    global _SUBREAPER_PID
    try:
        import ctypes

        if ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0:  # PR_SET_CHILD_SUBREAPER (Linux >= 3.4)
            _SUBREAPER_PID = os.getpid()
    except (ImportError, OSError, AttributeError):
        pass


def _children() -> list[int]:
    """This process's children: its thread's ``children`` file (one read; this process runs one
    thread), else a scan of every ``/proc/<pid>/stat`` (a kernel built without CONFIG_PROC_CHILDREN)."""
    me = os.getpid()
    try:
        with open(f"/proc/self/task/{me}/children", "rb") as fh:
            return [int(pid) for pid in fh.read().split()]
    except OSError:
        pass
    out = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        stat = _stat_of(name) if name.isdigit() else b""
        try:
            if stat and int(stat[stat.rfind(b")") + 2:].split()[1]) == me:
                out.append(int(name))
        except (IndexError, ValueError):
            continue
    return out


def adopted_children(but: Collection[int | None]) -> list[list[object]]:
    """Live children of this subreaper other than ``but``: ``[pid, start ticks, command line]``
    each (the command line cut at 160 characters); none when this process is no subreaper, or
    where there is no ``/proc``. Once its worker ended: what the kernel's cells left running."""
    out: list[list[object]] = []
    if _SUBREAPER_PID != os.getpid():
        return out
    for pid in _children():
        if pid in but:
            continue
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                stat = fh.read()
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if fields[0] != b"Z":
            out.append([pid, int(fields[19]), cmd[:160]])
    return out


def print_exc_quietly() -> None:
    """The traceback of the exception being handled, on stderr (a process's last words before its
    ``os._exit``); nothing where that cannot be written."""
    try:
        traceback.print_exc()
    except BaseException:  # noqa: BLE001 - stderr gone or full: the exit status still says it
        pass
