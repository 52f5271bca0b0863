"""Probes: each takes a snapshot of one kind of resource as ``{identity: description}``.

A leak is an identity present after a test's fixture teardown that was absent before it.
Transports add probes for what they create (containers, processes inside them, ssh sessions)
with :func:`register_probe`.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass

import psutil

from ..kernel.runner.environ import SERVER_KERNEL_ID_PREFIX
from ..procs import has_children, left_behind, pids_with_env, reap_orphans, start_time
from .snapshot import UNCHECKED, Snapshot
from .transport_probe import REUSE_S, TransportResources  # noqa: F401 - REUSE_S: named here too, as before


@dataclass(frozen=True)
class Probe:
    """``snapshot() -> {identity: description}``; ``cleanup(identity)`` ends a leaked one (optional).

    A probe with ``kinds_in_identity`` reports several kinds: each identity starts with its kind
    and a ``|`` (``"container|<id>"``), and the report groups by that kind.
    """

    kind: str
    snapshot: Callable[[], Snapshot]
    cleanup: Callable[[str], None] | None = None
    kinds_in_identity: bool = False
    fresh: Callable[[], None] | None = None
    """For a probe that may reuse its last snapshot: make the next one look again."""
    places: Callable[[str], Collection[str]] | None = None
    """For a probe that looks at several places: the places (as its :data:`UNCHECKED` entries
    name them) that saw an identity in its last snapshot. A place blind before the test then
    hides only what it alone sees; without it, a blind part hides the whole probe."""


#: The first line of a kit's ``python -c`` script that names it (``# hermes-kernel: WHAT``).
SCRIPT_TAG = "# hermes-kernel: "


def _describe(proc: psutil.Process, kernel_id: str | None = None) -> str:
    """``pid N: command``, or ``pid N (kernel K): command`` for a kernel's process: the
    supervisor and worker of forked kernels all show their kernel server's command line.
    The command is one line, at most 160 characters."""
    try:
        cmd = _command(proc) or proc.name()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        cmd = "?"
    return f"pid {proc.pid}{f' (kernel {kernel_id})' if kernel_id else ''}: {cmd}"


def _command(proc: psutil.Process) -> str:
    """``proc``'s command line on one line (a ``-c`` script's newlines broke the report's one line
    per leak); a kit's own ``-c`` script by what its first line says it is, with what it holds: the
    filecell subreaper, which stays until what it adopted has ended, showed the start of its script.

    :raises psutil.NoSuchProcess: if it is gone.
    """
    argv = proc.cmdline()
    script = argv[argv.index("-c") + 1] if "-c" in argv[:-1] else ""
    if script.startswith(SCRIPT_TAG):
        held = ", ".join(filter(None, map(_held, proc.children())))
        return (f"{script.partition(chr(10))[0][len(SCRIPT_TAG):]} ({argv[0]}), which stays until what it adopted "
                f"has ended: {held or 'nothing now'}")[:240]
    return " ".join(" ".join(argv).split())[:160]


def _held(child: psutil.Process) -> str:
    """``pid N command`` of a process a subreaper holds; ``""`` when it just ended."""
    try:
        return f"pid {child.pid} {' '.join(' '.join(child.cmdline()).split())[:60]}"
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return ""


def _kernel_of(proc: psutil.Process, host_pid: str) -> str | None:
    """The kernel id ``proc`` carries when it is a kernel's process of host ``host_pid`` (``""``
    without an id); ``None`` when it is not (a kernel server is not)."""
    try:
        env = proc.environ()
    except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
        return None
    if env.get("HERMES_KERNEL_HOST_PID") != host_pid or _is_kernel_server(env):
        return None
    return env.get("HERMES_KERNEL_ID", "")


def _is_kernel_server(env: dict[str, str]) -> bool:
    """A kernel server (``kernel/runner/server.py``) outlives tests by design, as the run's shared
    containers do: it is the transport's, closed with it, and holds nothing of any kernel."""
    return env.get("HERMES_KERNEL_ID", "").startswith(SERVER_KERNEL_ID_PREFIX)


def _kernel_server(proc: psutil.Process) -> bool:
    try:
        return _is_kernel_server(proc.environ())
    except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
        return False


def _pid_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def kernel_processes() -> Snapshot:
    """Processes carrying this host's kernel marker (runners, workers, what their cells started)
    in this machine's process table and pid namespace, and what a spawned runner said, as it
    ended, its cells left running without the marker (:func:`~..procs.left_behind`).

    Kernels in a container or on an ssh host are listed through their transport (the
    ``remote kernel process`` kind of :class:`TransportResources`), which also works when the
    engine or host is elsewhere; here they would only be counted twice.
    """
    from ..kernel.contract import activity

    if activity() == 0:  # nothing was ever started towards a kernel here: no process carries our marker
        return {}
    me, own_ns = str(os.getpid()), _pid_namespace("self")
    out = {}
    for pid in pids_with_env("HERMES_KERNEL_HOST_PID", [me]):  # a byte search; then the full checks
        try:
            proc = psutil.Process(pid)
            kernel_id = None if proc.pid == os.getpid() else _kernel_of(proc, me)
            if (kernel_id is None or proc.status() == psutil.STATUS_ZOMBIE
                    or (own_ns is not None and _pid_namespace(proc.pid) not in (own_ns, None))):
                continue
            out[_identity(proc.pid)] = _describe(proc, kernel_id)
        except psutil.NoSuchProcess:
            continue
    for pid, kernel_id in left_behind().items():
        try:
            out[_identity(pid)] = _describe(psutil.Process(pid), kernel_id)
        except psutil.NoSuchProcess:
            continue
    return out


def child_processes() -> Snapshot:
    """Live descendants of the test process (a stray subprocess a test forgot), and what it adopted
    as a subreaper during the test (the plugin makes it one): a helper that detached from it
    (``setsid``, an environment of its own, its parent gone); ended ones it adopted are reaped.

    psutil finds descendants from the parent of every process on the machine; when the kernel
    says this process has no child at all, that walk is skipped (:func:`~..procs.has_children`).
    """
    if not has_children(os.getpid()) or (reap_orphans() and not has_children(os.getpid())):
        return {}
    out = {}
    for proc in psutil.Process().children(recursive=True):
        try:
            if proc.status() != psutil.STATUS_ZOMBIE and not _kernel_server(proc):
                out[_identity(proc.pid)] = _describe(proc)
        except psutil.NoSuchProcess:
            continue
    return out


def kernel_resources(kernel_ids: Collection[str]) -> set[str]:
    """Identities (as the process probes name them) of these kernels' processes, their children,
    and the child of this process they run under (what holds them here: a filecell backend's
    subreaper, a kernel server), which the child-process probe lists."""
    out: set[str] = set()
    me = os.getpid()
    for pid in pids_with_env("HERMES_KERNEL_ID", kernel_ids):
        try:
            proc = psutil.Process(pid)
            if proc.environ().get("HERMES_KERNEL_ID") not in kernel_ids:
                continue
            holder = next((p for p in proc.parents() if p.ppid() == me), None)
            for member in [proc, *proc.children(recursive=True), *([holder] if holder is not None else [])]:
                out.add(_identity(member.pid))
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
    return out


def _identity(pid: int) -> str:
    """``pid:start`` (seconds since boot, :func:`~pytest_hermes_kernel.procs.start_time`): one
    process, whenever and wherever it is read.

    :raises psutil.NoSuchProcess: if it is gone.
    """
    started = start_time(pid)
    if started is None:
        raise psutil.NoSuchProcess(pid)
    return f"{pid}:{started}"


def _kill_process(identity: str) -> None:
    """SIGKILL it; one this process adopted (:func:`child_processes`) is reaped once it ended."""
    pid, _, _ = identity.partition(":")
    try:
        if _identity(int(pid)) == identity:  # never a recycled pid
            proc = psutil.Process(int(pid))
            proc.kill()
            deadline = time.monotonic() + 1.0  # (not psutil's wait(): it would reap a Popen's child)
            while proc.ppid() == os.getpid() and proc.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
                time.sleep(0.01)
            reap_orphans()
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        pass


SHARED_THREAD_PREFIX = "hermes-shared "
#: pytest-timeout's timer of one test (``timeout_method=thread``): started before the test's setup,
#: cancelled after its teardown, by pytest-timeout itself. A check whose "before" is the previous
#: test's "after" (taken in its teardown, before this timer started) reported it as this test's leak.
TIMEOUT_TIMER_PREFIX = "pytest_timeout "


def threads() -> Snapshot:
    """Live Python threads of the test process.

    Threads named ``hermes-shared ...`` belong to a transport shared by the whole session (the
    ssh transport's connection and its keepalive checker): they outlive every single test; nor is
    pytest-timeout's timer a test's (:data:`TIMEOUT_TIMER_PREFIX`). A
    thread is named by its ident and its kernel thread id: a new thread takes the ident (its
    pthread's address) of one that just ended, and a leaked one passed as the thread before it.
    """
    return {f"thread:{t.ident}:{t.native_id}": f"thread {t.name!r} (daemon={t.daemon})" for t in threading.enumerate()
            if t.ident is not None and t.is_alive() and not t.name.startswith((SHARED_THREAD_PREFIX, TIMEOUT_TIMER_PREFIX))}


#: An arena of ``multiprocessing``'s shared heap (``multiprocessing.heap``: ``Value``, ``Array``),
#: which it keeps open, unlinked, for the process's life and reuses: no test's leak.
_MP_HEAP_ARENA = re.compile(r"/dev/shm/pym-\d+-\w+ \(deleted\)$")


def file_descriptors() -> Snapshot:
    """Open pipes and files of the test process (sockets are left out: client pools keep them;
    devices too, but not a file in ``/dev/shm``: a shared memory segment never closed)."""
    out = {}
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return out
    for name in names:
        try:
            target = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue
        if target.startswith(("pipe:", "/")) and (target.startswith("/dev/shm/")
                                                  or not target.startswith(("/dev/", "/proc/"))):
            if not _MP_HEAP_ARENA.match(target):
                out[f"fd:{name}:{target}"] = f"fd {name} -> {target}"
    return out


def _own_dir_prefix() -> str:
    from ..transports.kernel_dirs import KERNEL_DIR_PREFIX

    return f"{KERNEL_DIR_PREFIX}{os.getpid()}-"


#: The modules that make local kernel dirs and registries: a process that never imported one
#: made none (a test run that starts no kernel then pays for neither import: ~30 ms a pytest start).
_LOCAL_TRANSPORT = f"{__name__.rsplit('.', 2)[0]}.transports.local"
_REGISTRY = f"{__name__.rsplit('.', 2)[0]}.kernel.registry"


def kernel_dirs() -> Snapshot:
    """Local kernel dirs this process made (``hermes-kernel-<pid>-*``) in the kernel dir root and
    in every other root it made one in (a test's own ``TMPDIR``, put back before the check).

    Dirs of other processes (pytest-xdist workers, other sessions, a host of the same pid in
    another pid namespace sharing the temp dir) are theirs to report.
    """
    if _LOCAL_TRANSPORT not in sys.modules:  # only the local transport makes them
        return {}
    from ..transports.kernel_dirs import made_in_this_pid_namespace as ours  # another namespace's pid 1 is not us
    prefix, out = _own_dir_prefix(), {}
    for root in _kernel_dir_roots():
        try:
            names = os.listdir(root)
        except FileNotFoundError:  # a test's own temp dir, removed since: nothing left there
            _forget_root(root)
            continue
        except OSError:
            continue
        out.update({f"dir:{n}": path for n in names  # (still there after the look: not one renamed away meanwhile)
                    if n.startswith(prefix) and ours(path := os.path.join(root, n)) and os.path.lexists(path)})
    return out


def _kernel_dir_roots() -> list[str]:
    from ..transports.kernel_dirs import ROOTS_USED, kernel_dir_root

    return list(dict.fromkeys([kernel_dir_root(), *sorted(ROOTS_USED)]))


def _forget_root(root: str) -> None:
    from ..transports.kernel_dirs import ROOTS_USED

    ROOTS_USED.discard(root)


def _remove_kernel_dir(identity: str) -> None:
    """Remove a leaked kernel dir of this process (its processes were ended by the probes before)."""
    from ..transports.kernel_dirs import remove_kernel_dir  # (renamed first: no neighbour sees it half removed)

    name = identity.partition(":")[2]
    if not name.startswith(_own_dir_prefix()):
        return
    for root in _kernel_dir_roots():
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            remove_kernel_dir(path)  # (a cell's tree deeper than the recursion limit too)


def registry_entries() -> Snapshot:
    """Entries of live :class:`KernelRegistry` objects."""
    out = {}
    if _REGISTRY not in sys.modules:  # no registry was ever made here
        return out
    from ..kernel.registry import live_registries

    for registry in live_registries():
        for snap in registry.snapshot():  # type: ignore[attr-defined]
            out[f"entry:{snap.kernel_id}"] = f"registry entry {snap.key.owner!r} kernel {snap.kernel_id} pid {snap.pid}"
    return out


_transport_resources = TransportResources()

PROBES: list[Probe] = [
    Probe("kernel process", kernel_processes, _kill_process),
    Probe("child process", child_processes, _kill_process),
    Probe("thread", threads),
    Probe("fd", file_descriptors),
    Probe("kernel dir", kernel_dirs, _remove_kernel_dir),
    Probe("registry entry", registry_entries),
    Probe("transport resource", _transport_resources.snapshot, _transport_resources.cleanup, kinds_in_identity=True,
          fresh=_transport_resources.fresh, places=_transport_resources.places),
]


def register_probe(probe: Probe) -> None:
    """Add a probe (transports add theirs when first used); a probe of the same kind is replaced."""
    PROBES[:] = [p for p in PROBES if p.kind != probe.kind] + [probe]
