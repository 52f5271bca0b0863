"""Post-mortem: a failed test's kernels stay alive after pytest exits (``--hermes-keep-failed``).

At a failed test's teardown, each of its live kernels on a ``keepable`` transport (local,
docker, ssh) is recorded (:mod:`~pytest_hermes_kernel.containers.kept`: a 0600 file in the per-user
0700 kept dir, with its locator and attach token), then switched: the runner listens on a
socket in its 0700 kernel dir and takes the TTL (``--hermes-keep-failed-ttl``, default 1 h) as
its orphan timer, and the handle detaches (a docker or ssh runner listens on its socket
from its start: only its orphan timer changes, and its container, the kernel host or the sshd
container, stays while the record names it). Until that switch the kernel's channel is its parent-death
lease, so a host SIGKILLed before it still takes its kernels along. The terminal summary prints
for each kept kernel its id, transport, expiry and the commands that reach it
(``hermes-kernel exec``/``attach``/``ls``/``sweep --kept``). Kernels that cannot be kept past
the session (a host-harness or fault-firing kernel, one in a fault's memory cgroup, a transport
that is not ``keepable``, a local one of a run that is its pid namespace's pid 1) are
kept until the session ends, as before, and the summary says so.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import sys
import time
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import HermesKernelError, TransportLostError, UnsafeRunDirError
from .report import stats_key
from .settings import settings_key

if TYPE_CHECKING:  # imported by the functions, which run only when a failed test's kernels are kept
    from ..containers.kept import KeptKernel
    from ..kernel.handle import KernelHandle
    from ..kernel.interface import Kernel

__all__ = ["keep_kernels"]


def keep_kernels(item: pytest.Item, kernels: list[Kernel]) -> None:
    """Keep the live ``kernels`` of the failed test ``item`` (see module docstring)."""
    from ..kernel.handle import KernelHandle

    stats = item.config.stash[stats_key]
    ttl, cap = item.config.stash[settings_key].keep_failed_ttl, item.config.stash[settings_key].keep_failed_max
    title = _run_of(item)
    for kernel in kernels:
        if not kernel.alive:
            _end_unkept(item.nodeid, title, kernel, stats)
            continue
        # a kernel in a memory cgroup a fault made (hermes_oom on local) goes with the group, which
        # the run removes: it cannot outlive the session (its "kept" worker was dead at once)
        if (isinstance(kernel, KernelHandle) and kernel.transport.keepable and kernel.options.cgroup_procs is None
                and not _ends_with_the_run(item.config, kernel)):
            if cap is not None and len(stats.kept_past) >= cap:  # 200 failed tests kept 200 kernels for the TTL
                _end_unkept(item.nodeid, title, kernel, stats, f"this process keeps at most {cap} "
                            "(--hermes-keep-failed-max)")
                continue
            record, text = _keep_past_session(item.nodeid, kernel, ttl, str(item.config.rootpath), title)
            stats.keep_past(item.nodeid, record, text)
        else:
            stats.keep(title, kernel, _why_session_only(kernel))


def _why_session_only(kernel: Kernel) -> str:
    """Why ``kernel`` cannot outlive the session, as the summary says it: the line said only "it
    cannot outlive it", which left the author of a transport of their own guessing."""
    from ..kernel.handle import KernelHandle

    if not isinstance(kernel, KernelHandle):
        return "a fault marker's kernel (a host harness, or one a fault fires on) goes with the run"
    if not kernel.transport.keepable:
        return (f"the {kernel.transport.name} transport keeps no kernel past the session "
                f"(Transport.keepable is False)")
    if kernel.options.cgroup_procs is None:
        return ("this run is its pid namespace's first process (pytest as pid 1: a container's command, "
                "`unshare --pid --fork`), or the one command of its init (tini: `docker run --init`), and every "
                "process of the namespace ends with it, the kernel too")
    return "its memory cgroup (hermes_oom) is removed at the run's end, and the kernel with it"


#: Inits that run one command and exit when it does (``docker run --init`` runs tini as docker-init).
ONE_COMMAND_INITS = ("docker-init", "tini", "tini-static", "dumb-init", "catatonit")


def _ends_with_the_run(config: pytest.Config, kernel: KernelHandle) -> bool:
    """Whether ``kernel`` is a process of this machine's pid namespace whose first process (pid 1)
    is this run, its pytest or (under xdist) the controller of this worker, or an init that runs
    this run as its one command (tini, ``docker run --init``): the namespace, and every process in
    it, ends when the run does. Its summary promised the TTL, and its record outlived it."""
    from ..procs import read_stat

    if kernel.transport.name != "local":
        return False
    run = os.getppid() if hasattr(config, "workerinput") else os.getpid()  # the run's first process
    if run == 1:
        return True
    stat = read_stat(run)
    try:
        with open("/proc/1/comm", encoding="utf-8") as fh:
            init = fh.read().strip()
    except OSError:
        return False
    return stat is not None and stat[1] == b"1" and init in ONE_COMMAND_INITS


def _end_unkept(nodeid: str, title: str, kernel: Kernel, stats: Any, why: str = "") -> None:
    """A failed test's kernel that is not alive has no namespace to keep: its worker died, or the wait
    of its cell was cut (pytest-timeout, Ctrl-C). Shut it down, and the summary says so; one the test
    shut down itself is left as it is. Before, such a kernel was neither kept nor shut down: its runner
    and kernel dir were the test's leak (``kernel ... still runs``, a LeakError under ``=error``). A live
    kernel past ``--hermes-keep-failed-max`` is shut down the same way, ``why`` saying so."""
    if getattr(kernel, "stopping", False):
        return
    try:
        kernel.shutdown()
        how = "shut down"
    except HermesKernelError as exc:
        how = f"its shutdown failed: {exc}"
    why = why or ("it was not alive at the test's end (its worker had died, or its cell's wait was cut), so "
                  "nothing was left to keep")
    stats.keep_past(nodeid, None, f"{title}: kernel {kernel.kernel_id} not kept: {why}: {how}")


def _given(kernel: KernelHandle) -> dict[str, str]:
    """What the kernel was given that its record must redact: its own ``env``, and the host variables
    ``env_allow`` let through (the test redacted them as the host's secrets; ``exec`` printed them)."""
    allowed = {name: os.environ[name] for name in kernel.options.env_allow if name in os.environ}
    return {**allowed, **kernel.options.env}


def _run_of(item: pytest.Item) -> str:
    """The summary's name of the failed run: the test, and which attempt when pytest-rerunfailures
    runs a failed test again (``--reruns``): each failed attempt keeps its kernels, a test that
    passed on a later one's too, and the summary named them all alike, as if the test had failed."""
    n = getattr(item, "execution_count", None)  # pytest-rerunfailures counts an item's runs
    return f"{item.nodeid} (attempt {n} under --reruns)" if isinstance(n, int) and n > 0 else item.nodeid


def _keep_past_session(nodeid: str, kernel: KernelHandle, ttl: float, rootdir: str | None = None,
                       title: str | None = None) -> tuple[KeptKernel | None, str]:
    """Record ``kernel``, then switch it to outlive this process; the summary's text for it.

    The record is written before the switch, so a kept kernel always has one; a switch that
    fails removes it again (the kernel was shut down), and so does one cut short by Ctrl-C or a
    SIGTERM (``keep()`` then ends the runner): the record named a kernel that was gone, and on
    docker and ssh held the run's container for the whole TTL.
    """
    from ..containers.kept import KeptKernel, save
    from ..kernel.output import secret_values

    launched = kernel.launched
    assert launched is not None  # alive
    runner_pid, kid = launched.pid, kernel.kernel_id
    kept = False
    try:
        record = KeptKernel(kernel_id=kid, transport=kernel.transport.name,
                            locator=kernel.transport.kept_locator(launched), token=kernel.token, nodeid=nodeid,
                            kept_at=time.time(), detached_at=time.time(), ttl_s=ttl, host_pid=os.getpid(),
                            worker_pid=kernel.pid, rootdir=rootdir, secrets=list(secret_values(_given(kernel))))
        save(record)
        kept = kernel.keep(ttl).step == "kept"
    except (TransportLostError, UnsafeRunDirError, OSError) as exc:
        _forget(kid)  # an unsafe kept dir refuses this too: it raised before the shutdown, which never came
        kernel.shutdown()
        return None, f"{title or nodeid}: kernel {kid} could not be kept, so it was shut down: {exc}"
    except BaseException:
        if not kept:
            _forget(kid)
        raise
    record = record.detached_now()
    save(record)
    return record, describe(record, runner_pid, title)


def _forget(kernel_id: str) -> None:
    """Remove the record of a kernel that was not kept, if there is one (an unsafe or full kept
    dir holds none: its refusal is the keep's own error, said already)."""
    from ..containers.kept import remove

    try:
        remove(kernel_id)
    except (UnsafeRunDirError, OSError):
        pass


def _clock_time(at: float) -> str:
    """``at`` (epoch seconds) as the local clock shows it: the time of day within a day from now,
    else with its date (a 30-day TTL's expiry read as a time of today); a time the platform's
    clock cannot show (``time.localtime`` overflows past year 9999 or so) is said so."""
    try:
        return time.strftime("%H:%M:%S" if at - time.time() < 86400 else "%Y-%m-%d %H:%M:%S", time.localtime(at))
    except (OverflowError, OSError, ValueError):
        return "a time past what this machine's clock can show"


def cli_command() -> str:
    """How a shell reaches this installation's ``hermes-kernel``: by name where the ``PATH`` finds
    that very script, else by its path beside the interpreter (a run started as ``.venv/bin/python -m
    pytest`` without the venv activated: the summary's ``hermes-kernel exec ...`` said ``command not
    found``), else as ``python -m pytest_hermes_kernel.cli``."""
    beside, found = os.path.join(os.path.dirname(sys.executable), "hermes-kernel"), shutil.which("hermes-kernel")
    if not os.access(beside, os.X_OK):
        return "hermes-kernel" if found else f"{shlex.quote(sys.executable)} -m pytest_hermes_kernel.cli"
    with contextlib.suppress(OSError):
        if found and os.path.samefile(found, beside):
            return "hermes-kernel"
    return shlex.quote(beside)


def describe(record: KeptKernel, runner_pid: int | None, title: str | None = None) -> str:
    """The summary's lines for one kept kernel: what it is, when it expires, how to reach it
    (``title``: the test as the summary names it, its record's node id by default)."""
    from ..containers.engines import DEFAULT_SOCKET

    kid = record.kernel_id
    at = _clock_time(record.expires_at)
    container, target = record.locator.get("container_id"), record.locator.get("target")
    host = f" {target}" if target and not container else ""  # an ssh target: which host
    engine = record.locator.get("docker_host")
    cli = "docker" if engine in (None, DEFAULT_SOCKET) else f"docker -H {engine}"  # the engine it is kept on
    shell = [f"    {cli} exec -it {str(container)[:12]} sh    a shell in its container (kept with it)"] if container else []
    hk = cli_command()
    return "\n".join([
        f"kept for post-mortem: {title or record.nodeid}: kernel {kid} on {record.transport}{host} (worker pid "
        f"{record.worker_pid}, runner pid {runner_pid}); it ends by itself {record.ttl_s:g} s after "
        f"its last client leaves (at {at} if none comes)",
        f"    {hk} exec {kid} 'dir()'    run one cell in it",
        f"    {hk} attach {kid}    a console: each line is a cell",
        f"    {hk} ls    every kept kernel, alive or not",
        f"    {hk} sweep --kept --kernel {kid}    end it now",
        *shell,
    ])
