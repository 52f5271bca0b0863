"""What kernels on this machine left behind: kernel dirs and kernel processes whose host is gone.

The local kinds of ``hermes-kernel sweep``: local kernel dirs, filecell kernel dirs and kernel
processes (:func:`~pytest_hermes_kernel.cli.sweep` runs these after the run files, the kept
kernels and the containers); and the command's lines for the run files and containers it
removes (:mod:`~pytest_hermes_kernel.containers.sweep` finds them) and its summary.

A dry run lists what the sweep would remove. It leaves out what the kept sweep before it listed
(``spared``): the sweep ends those kept kernels first, and their kernel dirs and processes go
with them, so listing them again counted one kernel three times.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING

from ..kernel.runner.trees import remove_tree

if TYPE_CHECKING:
    from ..containers.kept import KeptKernel


def verb(dry_run: bool, verb: str = "remove") -> str:
    """``removed``/``killed``, or ``would remove``/``would kill`` in a dry run."""
    return f"would {verb}" if dry_run else f"{verb.rstrip('e')}ed"


def sweep_summary(removed: dict[str, int], *, dry_run: bool, raced: int = 0) -> str:
    """The last line of ``hermes-kernel sweep``: how many of each kind it removed (or would).

    :param removed: count by kind (``run-files``, ``containers``, ...), in the order swept.
    :param dry_run: the sweep only listed them.
    :param raced: containers it found to remove that another process removed first (another
        sweep): said beside the count, which they are not in (a dry run that listed one, then a
        sweep that said only ``0 containers``, read as nothing there to remove).
    """
    counts = [f"{n} {count_noun(kind, n)}" + (f" ({raced} {count_noun(kind, raced)} {'was' if raced == 1 else 'were'} "
                                              f"already removed, or being removed, by another process)"
                                              if kind == "containers" and raced else "")
              for kind, n in removed.items()]
    return ("sweep (dry run, nothing removed): " if dry_run else "sweep: ") + ", ".join(counts)


def count_noun(kind: str, n: int) -> str:
    """``run-files`` -> ``run files`` (``run file`` for one; ``kernel processes`` -> ``kernel process``)."""
    words = kind.replace("-", " ")
    if n != 1 and words != "kept":
        return words
    return words.removesuffix("es") if words.endswith("sses") else words.removesuffix("s")


def sweep_run_files(progress: Callable[[str], None], dry_run: bool) -> int:
    """Run directories and files of shared resources no live process holds (``run-files``).

    :param progress: called with one line per file or directory removed (or that would be).
    :param dry_run: only list them.
    :returns: how many were removed (or would be).
    """
    from ..containers.rundir import run_dirs
    from ..containers.sweep import sweep_dead_run_files

    dirs = {path for _run_id, path in run_dirs()}  # known before: a removed dir is no dir any more
    paths = sweep_dead_run_files(dry_run=dry_run)
    for path in paths:
        progress(f"{verb(dry_run)} run {'dir' if path in dirs else 'file'} {path} (no live process holds it)")
    return len(paths)


def sweep_containers(progress: Callable[[str], None], dry_run: bool, *, reused: bool = False,
                     engine: str | None = None, raced: list[str] | None = None) -> int:
    """Labelled containers on ``engine`` that no live process uses (``containers``; with ``reused``,
    parked reusable ones too). One another process removed first (another sweep of the same dead
    run) gets a line of its own and is not counted: the summary said ``0 containers`` of it, after
    a dry run had listed it.

    :param progress: called with one line per container removed (or that would be), or removed first by another process.
    :param dry_run: only list them.
    :param reused: containers kept between runs go too (unless a live run has claimed one).
    :param engine: the engine's URL (``None``: the environment's); one that does not answer is a line, skipped.
    :param raced: gets the ids of those another process removed first.
    :returns: how many were removed (or would be).
    """
    from ..containers.engines import engine_client, engine_url
    from ..containers.sweep import sweep_dead_runs
    from ..errors import HermesKernelError

    try:
        client = engine_client(engine)
    except (HermesKernelError, ImportError) as exc:
        progress(f"containers: skipped ({exc})")
        return 0
    beaten: list[str] = []
    try:
        ids = sweep_dead_runs(client, dry_run=dry_run, reused=reused, raced=beaten)
        for cid in ids:
            progress(f"{verb(dry_run)} container {cid[:12]} on {engine_url(client)} (no live process uses it)")
        for cid in beaten:
            progress(f"container {cid[:12]} on {engine_url(client)}: already removed, or being removed, by another "
                     "process (another sweep)")
    finally:
        client.close()
    if raced is not None:
        raced.extend(beaten)
    return len(ids)


def spared_by_kept(records: Iterable[KeptKernel]) -> tuple[set[str], set[str]]:
    """What ending these kept kernels takes along on this machine: ``(kernel dirs, kernel ids)``.

    The local kernel dir of each (ending a kernel removes it; so does cleaning up after a gone
    one) and the ids of those whose local runner still runs (its shutdown ends its processes; a
    gone runner's stragglers are still the process sweep's).
    """
    from .local import runner_runs

    dirs, ids = set(), set()
    for record in records:
        if record.transport == "local" and isinstance(record.locator.get("kernel_dir"), str):
            dirs.add(os.path.realpath(record.locator["kernel_dir"]))
            if runner_runs(record.locator):
                ids.add(record.kernel_id)
    return dirs, ids


def sweep_kernel_dirs(progress: Callable[[str], None], dry_run: bool, *, spared: Collection[str] = ()) -> int:
    """Local kernel dirs of dead hosts or older than the registry's stale age; filecell dirs.

    :param spared: real paths of kernel dirs not to list (a kept kernel's the kept sweep ends).
    """
    from ..kernel.registry import STALE_DIR_AGE_S
    from .kernel_dirs import remove_kernel_dir, stale_kernel_dirs

    removed = 0
    for path in stale_kernel_dirs(STALE_DIR_AGE_S):
        if os.path.realpath(path) in spared:
            continue
        if not dry_run:
            remove_kernel_dir(path)  # (renamed first: no neighbour's leak check sees it half removed)
        removed += 1
        progress(f"{verb(dry_run)} kernel dir {path} (its host is gone, or it is stale)")
    return removed + _sweep_filecell_dirs(progress, dry_run)


def _sweep_filecell_dirs(progress: Callable[[str], None], dry_run: bool) -> int:
    """Remove this user's local filecell kernel dirs whose runner (``runner.pid``) is gone (the
    old shared root holds other users' too: root's sweep removed them), never one whose runner
    runs in another pid namespace that still lives (a run under ``unshare --pid`` or in a container
    sharing ``/tmp``)."""
    from ..containers.rundir import read_small_file
    from ..procs import dirs_under, namespace_lives, pid_alive
    from .filecell.transport import DEFAULT_ROOT, LEGACY_ROOT

    removed = 0
    for _name, path in dirs_under(DEFAULT_ROOT, "k-") + dirs_under(LEGACY_ROOT, "k-"):
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue  # another user's, not ours to judge
            # "<pid> <its pid namespace>" (an older runner's: the pid alone); a regular file only: a cell
            # can put a fifo there (its cwd), whose open waited for a writer for good
            fields = read_small_file(os.path.join(path, "runner.pid"), 4096).decode("ascii").split()
            pid = int(fields[0])
            foreign = bool(fields[1:2]) and fields[1] != os.readlink("/proc/self/ns/pid")
            if foreign and namespace_lives(fields[1]):
                continue  # a runner of another live pid namespace sharing this dir: its pid is not one of ours
        except (OSError, ValueError, IndexError):
            continue  # still starting, or not ours to judge
        if foreign or not pid_alive(pid):  # (an ended namespace's runner is gone, whatever its pid names here)
            if not dry_run:
                remove_tree(path)
            removed += 1
            progress(f"{verb(dry_run)} filecell kernel dir {path} (its runner {pid} is gone)")
    return removed


def kill_orphan_kernels(progress: Callable[[str], None], dry_run: bool, *, spared: Collection[str] = (),
                        only: Collection[str] | None = None) -> int:
    """Kill this user's local kernel processes whose host (``HERMES_KERNEL_HOST_PID``) is gone.

    Only processes in this pid namespace are local: a docker kernel's processes are visible
    here too, with their host's pid, but their container decides their fate (a kept one
    outlives its host; the container sweep removes the rest). A kept kernel's are left alone
    until its TTL runs out, its record found under its host's temp dir as well as this one's.

    :param spared: kernel ids whose processes are not to be listed (a kept kernel's the kept sweep ends).
    :param only: if given, only these kernels' processes (``sweep --kept``: those of the kept
        kernels it ended, which a cell's daemon in a session of its own outlived).
    """
    import psutil

    from ..containers.kept import TMPDIR_ENV, KeptNearby

    killed = 0
    kept = KeptNearby()  # outlive their host on purpose, until their TTL ends
    for proc in psutil.process_iter(["pid"]):
        try:  # another user's are not ours to judge (root's sweep killed a user's kept kernel)
            env = proc.environ() if _in_this_pid_namespace(proc.pid) and proc.uids().real == os.getuid() else {}
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
        host = env.get("HERMES_KERNEL_HOST_PID")
        if not host or not host.isdigit() or psutil.pid_exists(int(host)) or proc.pid == os.getpid():
            continue
        kernel_id = env.get("HERMES_KERNEL_ID")
        if only is not None and kernel_id not in only:
            continue
        # its record: under its host's TMPDIR; a kit before 2026-12-04 set no TMPDIR_ENV, but its
        # kernel inherited its host's TMPDIR (without it, a sweep with another TMPDIR killed it)
        if kernel_id in spared or kept.holds_kernel(kernel_id, env.get(TMPDIR_ENV) or env.get("TMPDIR")):
            continue
        try:
            if not dry_run:
                proc.send_signal(signal.SIGKILL)
            killed += 1
            progress(f"{verb(dry_run, 'kill')} kernel process {proc.pid} (host {host} is gone)")
        except psutil.NoSuchProcess:
            continue
    return killed


def _in_this_pid_namespace(pid: int) -> bool:
    """Whether process ``pid`` shares this process's pid namespace (not inside a container).

    :raises OSError: if its namespace cannot be read (gone, or another user's).
    """
    return os.readlink(f"/proc/{pid}/ns/pid") == os.readlink("/proc/self/ns/pid")
