"""The controller's reap of a crashed xdist worker's local kernels (B41): by the worker's pid as
their host, and only what was started after the worker: pids wrap (at 32768 on this machine, a
full run wraps them several times), so an older process naming that pid as its host belongs to
an earlier holder of the pid (a kept kernel, one that outlived a SIGKILLed host)."""

from __future__ import annotations

import os
import random
import subprocess
import uuid

import psutil
import pytest

from pytest_hermes_kernel.plugin.crashes import reap_local
from pytest_hermes_kernel.procs import start_time
from tests.support import wait_until


def _kernel_process(host_pid: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "HERMES_KERNEL_ID": uuid.uuid4().hex, "HERMES_KERNEL_HOST_PID": str(host_pid)}
    return subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)


def _host_pid() -> int:
    """A host pid no process can have (past ``pid_max``), and no other test's (random)."""
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as fh:
        return int(fh.read()) + random.randrange(1000, 1_000_000)


def _now() -> float:
    """Now, on the clock of ``procs.start_time`` (seconds since boot)."""
    with open("/proc/uptime", encoding="ascii") as fh:
        return float(fh.read().split()[0])


def _marked(proc: subprocess.Popen[bytes]) -> bool:
    try:
        return "HERMES_KERNEL_HOST_PID" in psutil.Process(proc.pid).environ()
    except psutil.Error:
        return False


def test_the_reap_of_a_crashed_worker_spares_what_an_earlier_holder_of_its_pid_left() -> None:
    host = _host_pid()
    older = _kernel_process(host)
    procs = [older]
    try:
        wait_until(lambda: _marked(older), 5.0, what="the older process to have exec'd with its marker")
        worker_started = start_time(older.pid) + 0.05
        wait_until(lambda: _now() > worker_started + 0.02, 1.0, what="the worker's start to be past")
        newer = _kernel_process(host)
        procs.append(newer)
        wait_until(lambda: _marked(newer), 5.0, what="the newer process to have exec'd with its marker")

        reaped = reap_local(host, since=worker_started)

        assert reaped == 1 and newer.wait(5) == -9
        assert older.poll() is None, "a process older than the crashed worker was killed as its kernel"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(5)


def test_a_wall_clock_set_back_after_the_worker_started_spares_none_of_its_kernels(monkeypatch) -> None:
    """psutil's ``create_time`` is the boot time as the wall clock says it is now, plus the ticks
    since boot: the worker's was read when it came up, its kernels' when it crashed. A clock set
    back meanwhile (NTP, a VM resumed) made its kernels look older than it, and they were spared."""
    from types import SimpleNamespace

    import psutil._pslinux as pslinux

    from pytest_hermes_kernel.plugin.crashes import _crashes, pytest_testnodeready

    worker = subprocess.Popen(["sleep", "300"], start_new_session=True)
    procs = [worker]
    try:
        node = SimpleNamespace(config=SimpleNamespace(stash=pytest.Stash()),
                               gateway=SimpleNamespace(id="gw0", spec=SimpleNamespace(popen=True),
                                                       _rinfo=lambda: SimpleNamespace(pid=worker.pid)))
        pytest_testnodeready(node)
        kernel = _kernel_process(worker.pid)
        procs.append(kernel)
        wait_until(lambda: _marked(kernel), 5.0, what="the kernel process to have exec'd with its marker")
        real_boot_time = pslinux.boot_time
        monkeypatch.setattr(pslinux, "boot_time", lambda: real_boot_time() - 5.0)  # the clock set back 5 s

        reaped = reap_local(worker.pid, _crashes(node.config).started["gw0"])

        assert reaped == 1 and kernel.wait(5) == -9
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(5)


def test_a_crashed_worker_on_another_machine_reaps_nothing_here(monkeypatch) -> None:
    """``--tx ssh=host`` runs a worker elsewhere: its pid is that machine's. Taken for a pid of
    this one, the worker's crash killed local kernels whose host happened to have that number."""
    from types import SimpleNamespace

    from pytest_hermes_kernel.plugin import crashes
    from pytest_hermes_kernel.plugin.crashes import _crashes, pytest_testnodedown, pytest_testnodeready
    from pytest_hermes_kernel.plugin.settings import settings_key

    monkeypatch.setattr(crashes, "reap_in_containers", lambda *args: 0)  # this machine's part only

    host = subprocess.Popen(["sleep", "300"], start_new_session=True)  # a local kernel host with the remote pid's number
    procs = [host]
    try:
        node = SimpleNamespace(config=SimpleNamespace(stash=pytest.Stash()),
                               gateway=SimpleNamespace(id="gw0", spec=SimpleNamespace(popen=None, ssh="elsewhere"),
                                                       _rinfo=lambda: SimpleNamespace(pid=host.pid)))
        node.config.stash[settings_key] = SimpleNamespace(docker_hosts=None)
        pytest_testnodeready(node)
        kernel = _kernel_process(host.pid)
        procs.append(kernel)
        wait_until(lambda: _marked(kernel), 5.0, what="the kernel process to have exec'd with its marker")

        pytest_testnodedown(node, error="worker 'gw0' crashed while running 'test_x.py::test_a'")

        assert _crashes(node.config).reaped == {}, "a local kernel was killed for a remote worker's crash"
        assert kernel.poll() is None
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(5)


def test_a_kernel_the_crashed_worker_kept_for_post_mortem_is_left_to_its_ttl(tmp_path) -> None:
    """``--hermes-keep-failed`` keeps a failed test's kernel past its worker on purpose; a later
    crash of that worker killed it with its other kernels (``hermes-kernel attach`` then found
    its runner gone), where ``hermes-kernel sweep`` leaves it until its TTL."""
    import time

    from pytest_hermes_kernel.containers import kept

    host, kept_id = _host_pid(), uuid.uuid4().hex
    now = time.time()
    kept.save(kept.KeptKernel(kernel_id=kept_id, transport="local", locator={}, token="t", nodeid="t.py::t",
                              kept_at=now, detached_at=now, ttl_s=3600.0, host_pid=host), str(tmp_path))
    env = {**os.environ, "HERMES_KERNEL_HOST_PID": str(host), kept.TMPDIR_ENV: str(tmp_path)}
    procs = [subprocess.Popen(["sleep", "300"], env={**env, "HERMES_KERNEL_ID": kid}, start_new_session=True)
             for kid in (kept_id, uuid.uuid4().hex)]
    try:
        wait_until(lambda: all(_marked(p) for p in procs), 5.0, what="both processes to have exec'd with their markers")

        reaped = reap_local(host)

        assert reaped == 1 and procs[1].wait(5) == -9
        assert procs[0].poll() is None, "the kept kernel was killed with the crashed worker's others"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait(5)
