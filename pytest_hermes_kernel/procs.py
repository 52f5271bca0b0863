"""Process-tree helpers on top of psutil (Linux ``/proc`` for the session id psutil lacks).

Pid reuse (handed case B29): a pid read from ``/proc`` may belong to another process by the
time a signal is sent. Every signal from here goes through :func:`signal_if`: a pidfd is opened
*before* the process is checked, and the signal goes through that pidfd, so the check and the
signal are about one process; without pidfds the check runs immediately before ``kill``.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Collection

import psutil

PIDFD = hasattr(os, "pidfd_open") and hasattr(signal, "pidfd_send_signal")
"""Whether this Python and OS have pidfds (Linux >= 5.3, Python >= 3.9); else start-time checks."""


def pid_alive(pid: int) -> bool:
    """True when ``pid`` exists and is not a zombie."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


def process_table() -> str:
    """This machine's boot id and this process's pid namespace (``<boot id> pid:[N]``): which
    process table a pid recorded here is a pid of (a pid namespace alone is not enough: every
    machine's first one has the same number); ``"?"`` where ``/proc`` cannot say."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            return f"{fh.read().strip()} {os.readlink('/proc/self/ns/pid')}"
    except OSError:
        return "?"


def foreign_table(table: object) -> str:
    """How a recorded :func:`process_table` stands to this process's: ``""`` the same one (or
    nothing recorded: an older kit's; or ``/proc`` cannot say), ``"gone"`` every pid it names is
    gone (an earlier boot of this machine, or a pid namespace no process is in any more: a run in
    a container that ended), ``"namespace"`` another live pid namespace (a run inside a container
    or ``unshare --pid`` beside this one: its pids are not this table's, so nothing of it is
    judged from here)."""
    here = process_table()
    if not isinstance(table, str) or table in (here, "?") or here == "?":
        return ""
    boot, _, namespace = table.partition(" ")
    if boot != here.split(" ")[0] or not namespace_lives(namespace):
        return "gone"
    return "namespace"


#: The initial pid namespace (``PROC_PID_INIT_INO``): a process in it sees every process of the machine.
INIT_PID_NAMESPACE = "pid:[4026531836]"


def namespace_lives(namespace: str) -> bool:
    """Whether a process is in pid namespace ``namespace`` (``pid:[N]``); ``True`` when this process
    cannot tell (it is not in the initial namespace, or may not look at one of its user's own
    processes). Another user's process, which an ordinary user may not look at, is passed over: a
    run of this user's is never in it (counted as a "cannot tell", every namespace lived for every
    user but root: pid 2 is root's, and a killed run's containers and files were never swept)."""
    try:
        if os.readlink("/proc/self/ns/pid") != INIT_PID_NAMESPACE:
            return True
        names = os.listdir("/proc")
    except OSError:
        return True
    for name in names:  # (pid 1 is the initial namespace's own: a sandbox may refuse to show its link)
        try:
            if name.isdigit() and name != "1" and os.readlink(f"/proc/{name}/ns/pid") == namespace:
                if pid_alive(int(name)):
                    return True  # (a zombie of an ended namespace keeps its link until reaped)
        except PermissionError:
            try:
                if os.stat(f"/proc/{name}").st_uid != os.getuid():
                    continue  # another user's
            except OSError:
                continue  # gone meanwhile
            return True
        except OSError:
            continue
    return False


def read_stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (field 3 first), or ``None`` if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def start_time(pid: int) -> float | None:
    """When ``pid`` started, in seconds since boot (the start ticks of ``/proc/PID/stat``), or
    ``None`` if it is gone; a process's identity with its pid, the same in every process.

    Not ``psutil.Process.create_time()``: that adds the boot time of ``/proc/stat``, which moves
    when the wall clock is stepped (a VM's clock corrected), so two processes reading it a moment
    apart disagree by a second about one process: a CI run judged the live members of its shared
    containers dead and removed the containers mid-test. Where there is no ``/proc``: psutil's
    value (wall clock).
    """
    fields = read_stat(pid)
    if fields is not None:
        return int(fields[19]) / _CLOCK_TICKS
    if os.path.isdir("/proc/self"):
        return None
    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return None


#: Seconds a wall-clock start time an older kit recorded may be off from this one's reading of
#: the same process (the wall clock may have been stepped since; see :func:`same_start`).
WALL_CLOCK_START_TOLERANCE_S = 10.0


def same_start(now: float | None, recorded: float, tolerance: float) -> bool:
    """Whether a process whose :func:`start_time` is ``now`` (``None``: gone) is the one recorded
    as started at ``recorded``, within ``tolerance`` seconds.

    ``recorded`` is seconds since boot, or, written by a kit before 2026-12-02 (a run of it still
    running: its container labels, its run files' members), psutil's wall-clock ``create_time()``:
    a value over the uptime, which no since-boot time reaches. Such a one is compared on the wall
    clock, within :data:`WALL_CLOCK_START_TOLERANCE_S` (read as since boot, it never matched: a
    newer sweep removed a live older run's containers).
    """
    if now is None:
        return False
    try:
        with open("/proc/uptime", "rb") as fh:
            uptime = float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        uptime = None
    if uptime is not None and recorded > uptime + tolerance:
        boot = time.time() - uptime
        return abs(boot + now - recorded) <= max(tolerance, WALL_CLOCK_START_TOLERANCE_S)
    return abs(now - recorded) <= tolerance


def session_id(pid: int) -> int | None:
    """The session id of ``pid`` (field 6 of ``/proc/PID/stat``), or ``None`` if it is gone."""
    fields = read_stat(pid)
    return None if fields is None else int(fields[3])


def start_ticks(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (field 22 of ``/proc/PID/stat``); ``None`` if gone.

    With the pid, it names one process for good: a reused pid has a later start.
    """
    fields = read_stat(pid)
    return None if fields is None else int(fields[19])


def signal_if(pid: int, sig: int, still: Callable[[list[bytes]], bool]) -> bool:
    """Send ``sig`` to ``pid`` only while it is the process ``still(stat fields)`` accepts.

    :param still: judges the fields of :func:`read_stat` (a session, a start time).
    :returns: whether the signal was sent (``False``: gone, not ours, or no longer that process).
    """
    fd = None
    try:
        if PIDFD:
            fd = os.pidfd_open(pid)  # first: the check below is then about this very process
        fields = read_stat(pid)
        if fields is None or not still(fields):
            return False
        if fd is None:
            os.kill(pid, sig)
        else:
            signal.pidfd_send_signal(fd, sig)
        return True
    except (OSError, ValueError, IndexError):  # gone (ESRCH), not ours (EPERM), an odd stat line
        return False
    finally:
        if fd is not None:
            os.close(fd)


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) pids whose session id is ``sid``."""
    members = []
    for pid in psutil.pids():
        if session_id(pid) == sid and pid_alive(pid):
            members.append(pid)
    return members


def kill_session(sid: int, sig: int = signal.SIGKILL, *, leader_start: int | None = None) -> list[int]:
    """Send ``sig`` to every process in session ``sid``; return the pids signalled.

    A kernel's runner leads its own session, so this reaches the runner, its worker and every
    process a cell started, including ones that moved to another process group (but not ones
    that called ``setsid`` themselves: that is how a cell opts a daemon out). Each member is
    checked and signalled through :func:`signal_if` (never a pid reused meanwhile).

    :param leader_start: the session leader's :func:`start_ticks`, when known: if pid ``sid``
        is now a process that started at another time, the leader was reaped and its pid reused
        by a new session of the same number, which is not ours: nothing is signalled.
    """
    if leader_start is not None and start_ticks(sid) not in (None, leader_start):
        return []
    return [pid for pid in session_members(sid)
            if signal_if(pid, sig, lambda fields: int(fields[3]) == sid and fields[0] != b"Z")]


def descendants(pid: int) -> list[psutil.Process]:
    """Every live descendant of ``pid`` (empty if it is gone)."""
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def children(pid: int) -> list[psutil.Process]:
    """The live children of ``pid`` (empty if it is gone or cannot be read)."""
    try:
        return psutil.Process(pid).children()
    except psutil.Error:
        return []


def has_children(pid: int) -> bool:
    """Whether ``pid`` may have a child process (zombies included); ``False`` when the kernel
    lists no child for any of its threads.

    Read from ``/proc/<pid>/task/<tid>/children`` (Linux >= 3.5 with ``CONFIG_PROC_CHILDREN``),
    one file per thread: a few small reads, where psutil's descendant walk reads the parent of
    every process on the machine (``python benchmarks/leak_probes.py`` compares both). Where the
    files cannot be read, ``True``: the caller walks the tree.
    """
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                if fh.read().strip():
                    return True
        except FileNotFoundError:
            if os.path.isdir(f"/proc/{pid}/task/{tid}"):
                return True  # the thread is there, its file is not: this kernel lacks them
            # that thread ended meanwhile: the kernel gave its children to another thread
        except OSError:
            return True
    return False


def set_subreaper(on: bool) -> bool | None:
    """Make this process a child subreaper (``PR_SET_CHILD_SUBREAPER``) or not; returns whether it
    was one, ``None`` where that cannot be asked (not Linux >= 3.4: nothing changed).

    A subreaper adopts its orphaned descendants: a helper that double-forked and detached
    (``setsid``, an environment of its own, its parent gone) stays a child of this process instead
    of init's, where the leak check's child-process probe sees it; :func:`reap_orphans` then reaps
    what it adopted once that ends. Not inherited by a fork.
    """
    global _LIBC
    try:
        import ctypes

        libc = _LIBC = _LIBC or ctypes.CDLL(None, use_errno=True)
        was = ctypes.c_int(0)
        if libc.prctl(37, ctypes.byref(was), 0, 0, 0) != 0 or libc.prctl(36, int(on), 0, 0, 0) != 0:
            return None  # PR_GET_CHILD_SUBREAPER, PR_SET_CHILD_SUBREAPER
        return bool(was.value)
    except (ImportError, OSError, AttributeError):
        return None


_LIBC = None
#: Zombie children (``pid:start ticks``) an object here was seen waiting for: not looked up again.
_OWNED: set[str] = set()


def reap_orphans() -> list[int]:
    """Reap this process's zombie children that no object here waits for (a ``subprocess.Popen``,
    ``asyncio``'s included, a ``multiprocessing`` process, a ``ptyprocess``/``pexpect`` child): what it adopted as a subreaper
    (:func:`set_subreaper`), which nobody else would reap. Returns their pids.

    Only a zombie's own pid is waited for (never ``waitpid(-1)``), so a ``Popen`` whose child
    ended keeps its exit status for its own ``wait()``. A child of a bare ``os.fork()`` that ended
    and was not waited for is reaped too: nothing tells it from an adopted one.
    """
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return []
    zombies: dict[int, str] = {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/children", "rb") as fh:
                pids = [int(pid) for pid in fh.read().split()]
        except OSError:
            continue
        for pid in pids:
            fields = read_stat(pid)
            if fields is not None and fields[0] == b"Z" and f"{pid}:{int(fields[19])}" not in _OWNED:
                zombies[pid] = f"{pid}:{int(fields[19])}"
    if not zombies:
        return []
    waited = _waited_for()  # a scan of every object: only while a zombie child is not known to be owned
    _OWNED.intersection_update([i for i in _OWNED if f"{i.partition(':')[0]}:{start_ticks(int(i.partition(':')[0]))}" == i])
    _OWNED.update(ident for pid, ident in zombies.items() if pid in waited)
    reaped = []
    for pid in sorted(set(zombies) - waited):
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                reaped.append(pid)
        except ChildProcessError:  # its owner reaped it meanwhile
            continue
    return reaped


def _waited_for() -> set[int]:
    """Pids of the children an object of this process waits for: its ``subprocess.Popen`` objects
    (``asyncio``'s included), ``multiprocessing``'s popen objects and ``ptyprocess``'s
    ``PtyProcess`` (``pexpect.spawn``'s) that have not reaped theirs."""
    import gc
    import subprocess
    import sys

    owners: tuple[type, ...] = (subprocess.Popen,)
    for module, name in (("multiprocessing.popen_fork", "Popen"), ("ptyprocess.ptyprocess", "PtyProcess")):
        owner = getattr(sys.modules.get(module), name, None)  # ptyprocess: pexpect.spawn's child, forked by it
        if isinstance(owner, type):
            owners += (owner,)
    return {obj.pid for obj in gc.get_objects() if issubclass(type(obj), owners)  # (type(): no proxy's __class__ runs)
            and isinstance(getattr(obj, "pid", None), int) and getattr(obj, "returncode", None) is None}


def pids_with_env(name: str, values: Collection[str]) -> list[int]:
    """Pids of processes whose environment has ``name=value`` for one of ``values``.

    Each process's ``/proc/<pid>/environ`` is searched as bytes for the whole entry, not parsed:
    the leak check runs this over the machine's whole process table after every test, and a
    parse of every environment into a dict (``psutil.Process.environ``) cost 4-5x as much (1.4
    against 6.1 CPU ms a scan of 80 processes on a 2-core machine, ``python
    benchmarks/leak_probes.py``; a parallel suite run has 300-500 processes). A process that is gone or cannot be read (another user's) is left out, as psutil's
    ``NoSuchProcess``/``AccessDenied`` are; the environment is the one the process was started
    with (a later ``os.environ`` change in it does not show, for psutil neither).
    """
    needles = [b"\0" + f"{name}={value}".encode() + b"\0" for value in values]
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as fh:
                block = b"\0" + fh.read() + b"\0"
        except OSError:
            continue
        if any(needle in block for needle in needles):
            found.append(int(entry))
    return found


def processes_with_env(name: str, value: str) -> list[str]:
    """``"pid: cmdline"`` of live processes whose environment has ``name=value``."""
    found = []
    for pid in pids_with_env(name, [value]):
        try:
            proc = psutil.Process(pid)
            if proc.environ().get(name) == value and proc.status() != psutil.STATUS_ZOMBIE:
                found.append(f"{proc.pid}: {' '.join(proc.cmdline())[:160]}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
    return found


def dirs_under(root: str, prefix: str) -> list[tuple[str, str]]:
    """``(name, path)`` of the entries of ``root`` named ``prefix*`` that are not symlinks
    (sweeps never follow a planted link); empty when ``root`` cannot be listed."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return [(n, os.path.join(root, n)) for n in names
            if n.startswith(prefix) and not os.path.islink(os.path.join(root, n))]


#: Processes on this machine that a spawned kernel runner said, as it ended, its cells left
#: running (:meth:`~.kernel.contract.Transport.note_leftovers`): pid -> (start ticks, kernel id).
_LEFT_BEHIND: dict[int, tuple[int, str]] = {}
_LEFT_BEHIND_LOCK = threading.Lock()
#: Entries of :data:`_LEFT_BEHIND` past which :func:`note_left_behind` forgets the processes gone
#: (then twice the ones still running): only a leak check's :func:`left_behind` forgot them, so a
#: process that ran none kept one per process its kernels' cells ever left, long after it ended.
LEFT_BEHIND_PRUNE_AT = 256
_prune_at = LEFT_BEHIND_PRUNE_AT


def note_left_behind(processes: Collection[tuple[int, int, str]], kernel_id: str) -> None:
    """Remember that kernel ``kernel_id``'s cells left ``processes`` running (``(pid, start
    ticks, command line)`` each); not one already gone (or whose pid names another process now).
    Past :data:`LEFT_BEHIND_PRUNE_AT` remembered, the ones gone since are forgotten."""
    global _prune_at
    with _LEFT_BEHIND_LOCK:
        for pid, ticks, _ in processes:
            if start_ticks(pid) == ticks:
                _LEFT_BEHIND[pid] = (ticks, kernel_id)
        if len(_LEFT_BEHIND) > _prune_at:
            _forget_gone(zombies=True)
            _prune_at = max(LEFT_BEHIND_PRUNE_AT, 2 * len(_LEFT_BEHIND))


def left_behind() -> dict[int, str]:
    """The processes :func:`note_left_behind` named that still run (pid -> kernel id); the
    ones gone are forgotten."""
    with _LEFT_BEHIND_LOCK:
        _forget_gone()
        return {pid: kernel_id for pid, (_, kernel_id) in _LEFT_BEHIND.items()}


def _forget_gone(*, zombies: bool = False) -> None:
    """Drop the entries of :data:`_LEFT_BEHIND` whose process is gone (the caller holds its lock);
    ``zombies``: an ended one not yet reaped too (an init that reaps late keeps them for a while)."""
    for pid, (ticks, _) in list(_LEFT_BEHIND.items()):
        fields = read_stat(pid)
        if fields is None or int(fields[19]) != ticks or (zombies and fields[0] == b"Z"):
            del _LEFT_BEHIND[pid]
