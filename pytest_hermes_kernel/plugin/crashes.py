"""pytest-xdist, on the controller: a worker that crashed has its kernels reaped at once (B41).

A worker that dies mid-test (``os._exit``, a segfault, SIGKILL, a teardown that kills it) runs
no teardown. Its local kernels end by their lease, but a filecell kernel lives until its idle
timer (30 min) and a docker or ssh runner until its orphan timer. So the controller learns
each worker's pid when it comes up (``pytest_testnodeready``) and, when one goes down with an
error (``pytest_testnodedown``), kills every process carrying that pid as its kernel host
(``HERMES_KERNEL_HOST_PID``): on this machine, one started after the worker (an older one names
an earlier holder of the pid), checked to be the same process right before the
signal (a filecell runner's kernel dir is removed once it is gone), and in the run's containers
(docker and the ssh transport's sshd, those claimed from an earlier run with ``--hermes-reuse``
too), by pid and start time. Kernels on a ``target=`` ssh host end by their orphan timer, and so
do those of a worker on another machine (``--tx ssh=...``), whose pid names nothing here. xdist
names the test the worker crashed in (``pytest_handlecrashitem``); the end-of-run summary repeats
it with what was reaped, and lists the kernels the worker had kept for post-mortem (from their
records: the worker's own list went down with it). Nothing here touches a live worker's
kernels: the pid is that of the dead worker only; nor a process of another pid namespace whose
host, by that namespace's pids, still runs (a run under ``unshare --pid`` or in a container).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from collections.abc import Callable, Sequence
from typing import Any

import psutil
import pytest

from ..containers.labels import LABEL_RUN_ID
from ..containers.sharing import current_run_id
from ..kernel.runner.trees import remove_tree
from ..procs import start_time
from .settings import settings_key


@dataclass
class Crashes:
    """What the controller knows of its workers: pids, crashed tests, reaped processes."""

    pids: dict[str, int] = field(default_factory=dict)
    started: dict[str, float] = field(default_factory=dict)  # each worker's start, seconds since boot (procs.start_time)
    ready_at: dict[str, float] = field(default_factory=dict)  # when each worker came up, epoch seconds
    crashed_in: dict[str, list[str]] = field(default_factory=dict)
    reaped: dict[str, int] = field(default_factory=dict)
    containers_removed: int = 0


_crashes_key = pytest.StashKey[Crashes]()


def _crashes(config: pytest.Config) -> Crashes:
    if _crashes_key not in config.stash:
        config.stash[_crashes_key] = Crashes()
    return config.stash[_crashes_key]


#: Seconds to wait for SIGKILLed runners to be gone before removing their kernel dirs.
_KILLED_WAIT_S = 3.0


def reap_local(host_pid: int, since: float | None = None) -> int:
    """SIGKILL every live process of this machine whose kernel host is ``host_pid``; how many.

    A killed runner whose working directory is its kernel dir (filecell's: it holds the
    ``runner.pid`` naming it) gets no chance to remove that dir: it is removed here once the
    runner is gone, or it would stay until ``hermes-kernel sweep``.

    A kernel kept for post-mortem (``--hermes-keep-failed``, its record unexpired) is left alone
    too, as ``hermes-kernel sweep`` leaves it: it outlives its host on purpose, until its TTL.

    :param since: the host's start, seconds since boot (:func:`~..procs.start_time`, which no
        clock step moves): a process started before it names an earlier holder of that pid as
        its host (a kept kernel, or one that outlived a SIGKILLed host; pids wrap, at 32768 on
        many machines) and is left alone.
    """
    from ..containers.kept import TMPDIR_ENV, KeptNearby

    kept = KeptNearby()
    killed: list[psutil.Process] = []
    kernel_dirs: dict[psutil.Process, str] = {}
    for proc in psutil.process_iter(["pid"]):
        try:
            env = proc.environ()
            if env.get("HERMES_KERNEL_HOST_PID") != str(host_pid) or proc.pid == host_pid:
                continue
            if since is not None and (start_time(proc.pid) or 0.0) < since:
                continue
            if _host_lives_in_its_namespace(proc.pid, host_pid):
                continue
            if kept.holds_kernel(env.get("HERMES_KERNEL_ID"), env.get(TMPDIR_ENV)):
                continue
            cwd = proc.cwd()
            proc.kill()  # psutil checks the pid still names the process it listed (start time)
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
        killed.append(proc)
        if _names_runner(cwd, proc.pid):
            kernel_dirs[proc] = cwd
    deadline = time.monotonic() + _KILLED_WAIT_S
    while kernel_dirs and time.monotonic() < deadline:
        for proc in [proc for proc in kernel_dirs if _gone(proc)]:
            remove_tree(kernel_dirs.pop(proc))  # (a cell's tree deeper than the recursion limit too)
        time.sleep(0.01)
    return len(killed)


def _host_lives_in_its_namespace(pid: int, host_pid: int) -> bool:
    """Whether process ``pid`` runs in another pid namespace in which a live process has the pid
    ``host_pid``: its host is that process (a run under ``unshare --pid`` or in a container beside
    this one names its host by that namespace's pid), not the crashed worker. The crashed worker's
    kernels in the run's containers name its pid here, which no process of theirs has (and
    :func:`reap_in_containers` reaps them there as well)."""
    try:
        namespace = os.readlink(f"/proc/{pid}/ns/pid")
        if namespace == os.readlink("/proc/self/ns/pid"):
            return False
    except OSError:
        return False
    for name in os.listdir("/proc"):
        try:
            if not name.isdigit() or os.readlink(f"/proc/{name}/ns/pid") != namespace:
                continue
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as fh:
                ids = next((line.split()[1:] for line in fh if line.startswith("NSpid:")), [])
            if ids and int(ids[-1]) == host_pid:  # its pid in its own (innermost) namespace
                return True
        except (OSError, ValueError):
            continue
    return False


def _gone(proc: psutil.Process) -> bool:
    """Whether ``proc`` has ended: gone (its pid reused counts: psutil checks the start time) or
    a zombie (on a machine whose pid 1 reaps nothing it stays one)."""
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _names_runner(path: str, pid: int) -> bool:
    """Whether ``path`` is a kernel dir whose ``runner.pid`` names ``pid`` (a regular file: a cell can
    put a fifo there, whose ``open`` waited for a writer for good, in the controller)."""
    from ..containers.rundir import read_small_file

    try:
        return read_small_file(os.path.join(path, "runner.pid"), 4096).decode("ascii").split()[:1] == [str(pid)]
    except (OSError, ValueError):
        return False


def reap_in_containers(host_pid: int, run_id: str, engines: Sequence[str] | None = None) -> int:
    """Kill ``host_pid``'s kernel processes in the run's containers (docker, sshd) on each engine
    (``--hermes-docker-hosts``; ``None``: the environment's); how many. An unexpired kept
    kernel's (``--hermes-keep-failed``) are left alone, as :func:`reap_local` leaves them."""
    return _sum_on_engines(engines, lambda client: _reap_on(client, host_pid, run_id))


def _sum_on_engines(engines: Sequence[str] | None, count: Callable[[Any], int]) -> int:
    """``count(client)`` summed over each engine (``None``: the environment's); an engine that
    cannot be reached or fails counts 0 (best effort: the next run's start-up sweep is the backstop)."""
    from ..containers.engines import DEFAULT_ENGINE, engine_client

    total = 0
    for engine in engines or (DEFAULT_ENGINE,):
        try:
            client = engine_client(None if engine == DEFAULT_ENGINE else engine)
        except Exception:  # noqa: BLE001 - no docker there: nothing to do on it
            continue
        try:
            total += count(client)
        except Exception:  # noqa: BLE001 - see the docstring
            pass
        finally:
            client.close()
    return total


def _reap_on(client: Any, host_pid: int, run_id: str) -> int:
    """In the run's containers: those labelled with its id, and those kept between runs
    (``--hermes-reuse``) that it claimed (labelled with the id of the run that made them)."""
    from ..containers.labels import LABEL_REUSE
    from ..containers.reuse import claimed_by_run

    killed = 0
    # sparse: no inspect per container, so one removed meanwhile cannot end the loop
    for container in client.containers.list(sparse=True, filters={"label": f"{LABEL_RUN_ID}"}):
        labels = container.attrs.get("Labels") or {}
        if labels.get(LABEL_RUN_ID) != run_id and not (labels.get(LABEL_REUSE) == "1" and claimed_by_run(
                container.id, labels, run_id)):
            continue
        try:
            killed += _reap_in(container, host_pid)
        except Exception:  # noqa: BLE001 - that container went or cannot be asked: the next one
            continue
    return killed


def _reap_in(container: Any, host_pid: int) -> int:
    """Kill ``host_pid``'s kernel processes in one container, as the kernels' user (the
    container's root lacks the ptrace right to read their environments: it would find none)."""
    from ..containers.kept import KeptNearby
    from ..containers.labels import LABEL_TMPDIR, label_path
    from ..containers.lifecycle import SSH_USER
    from ..transports.detached import (HOST_PROCESSES_SCRIPT, KILL_IF_SAME_SCRIPT, SCAN_END_CODE, SCAN_END_SH,
                                       parse_host_processes, until_complete)
    from ..transports.script_pythons import python_anywhere

    def run(script: str, *args: str, without: str = "exit 127") -> tuple[int, bytes]:  # python3 or the kernels' own
        return tuple(container.exec_run(python_anywhere(script, list(args), without), user=SSH_USER))  # type: ignore[return-value]

    answer, _, _ = until_complete(lambda: run(HOST_PROCESSES_SCRIPT + SCAN_END_CODE, str(host_pid), without=SCAN_END_SH))
    if answer is None:
        raise OSError(f"no complete answer from the kernel scan in container {container.id[:12]}")
    kept, tmpdir = KeptNearby(), label_path(container.attrs.get("Labels") or {}, LABEL_TMPDIR)  # sparse: attrs["Labels"]
    killed = 0
    for pid, start, kid, _cmd in parse_host_processes(answer):
        if kept.holds_kernel(kid, tmpdir):  # kept for post-mortem: it outlives its host on purpose, until its TTL
            continue
        code, _ = run(KILL_IF_SAME_SCRIPT, pid, start)
        killed += code == 0
    return killed


def live_worker_pids(config: pytest.Config) -> list[int]:
    """The pids of this controller's xdist workers that still run (each checked by its start time)."""
    crashes = config.stash.get(_crashes_key, None)
    if crashes is None:
        return []
    return [pid for worker, pid in list(crashes.pids.items())
            if worker in crashes.started and start_time(pid) == crashes.started[worker]]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodeready(node: Any) -> None:
    crashes = _crashes(node.config)
    if not getattr(node.gateway.spec, "popen", False):  # a worker on another machine (--tx ssh=, socket=):
        return  # its pid names nothing here, its kernels are there (they end by their own timers)
    try:
        pid = crashes.pids[node.gateway.id] = int(node.gateway._rinfo().pid)
    except Exception:  # noqa: BLE001 - without its pid a crashed worker is left to the backstops
        return
    crashes.ready_at[node.gateway.id] = time.time()
    started = start_time(pid)
    if started is not None:  # else gone already (its death is reported next) or not local: reaped by pid alone
        crashes.started[node.gateway.id] = started


@pytest.hookimpl(optionalhook=True, trylast=True)  # after the worker's counts are merged (plugin.report)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    crashes = _crashes(node.config)
    pid = crashes.pids.pop(node.gateway.id, None)
    since = crashes.started.pop(node.gateway.id, None)
    ready_at = crashes.ready_at.pop(node.gateway.id, None)
    if error is None or pid is None:
        return
    engines = node.config.stash[settings_key].docker_hosts
    crashes.reaped[node.gateway.id] = reap_local(pid, since) + reap_in_containers(pid, current_run_id(), engines)
    if ready_at is not None:
        _list_kept_by(node.config, pid, ready_at)


def _list_kept_by(config: pytest.Config, pid: int, since: float) -> None:
    """The kernels a crashed worker kept for post-mortem (``--hermes-keep-failed``) go in the
    summary from their records: the worker's own list of them went down with it."""
    from ..containers.kept import unexpired
    from .keep import describe
    from .report import stats_key

    stats = config.stash[stats_key]
    listed = "\n".join(stats.kept_lines())  # those its last test's report carried are listed already
    for record in unexpired():
        if record.host_pid == pid and record.kept_at >= since and f"kernel {record.kernel_id} " not in listed:
            stats.kept_elsewhere.append(describe(record, record.locator.get("runner_pid")))


@pytest.hookimpl(optionalhook=True)
def pytest_handlecrashitem(crashitem: str, report: Any, sched: Any) -> None:
    worker = report.node.gateway.id
    _crashes(report.node.config).crashed_in.setdefault(worker, []).append(crashitem)


def remove_unheld_run_containers(run_id: str, engines: Sequence[str] | None = None) -> int:
    """Remove the run's containers nobody alive holds, on each engine; how many (never raises)."""
    from ..containers.sweep import sweep_run_unheld

    return _sum_on_engines(engines, lambda client: len(sweep_run_unheld(run_id, client)))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On the controller, after a run in which workers crashed: a crashed worker never left the
    shared containers (docker host, sshd) it alone held; every worker is down now, so the run's
    containers that no live process holds are removed (B41), and the run's files that only they
    held (a container kept with ``--hermes-reuse`` stays, for the next run)."""
    crashes = session.config.stash.get(_crashes_key, None)
    if crashes is None or not crashes.reaped:
        return
    from ..containers.sweep import sweep_run_files_unheld

    engines = session.config.stash[settings_key].docker_hosts
    crashes.containers_removed = remove_unheld_run_containers(current_run_id(), engines)
    try:  # and the run's files they alone held (those of containers kept with --hermes-reuse too)
        sweep_run_files_unheld(current_run_id())
    except Exception:  # noqa: BLE001 - best effort: the next sweep removes them
        pass


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    crashes = config.stash.get(_crashes_key, None)
    if crashes is None or not (crashes.crashed_in or crashes.reaped):
        return
    for worker in sorted(set(crashes.crashed_in) | set(crashes.reaped)):
        where = ", ".join(crashes.crashed_in.get(worker, [])) or "between tests"
        terminalreporter.write_line(f"hermes-kernel: worker {worker} crashed in {where}; "
                                    f"{crashes.reaped.get(worker, 0)} of its kernel processes reaped")
    if crashes.containers_removed:
        terminalreporter.write_line(f"hermes-kernel: {crashes.containers_removed} container(s) of this run that only "
                                    "crashed workers held removed")
