"""The controller's reap of a crashed xdist worker's local kernels (B41): by the worker's pid as
their host, and only what was started after the worker: pids wrap (at 32768 on this machine, a
full run wraps them several times), so an older process naming that pid as its host belongs to
an earlier holder of the pid (a kept kernel, one that outlived a SIGKILLed host)."""

from __future__ import annotations

import random
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import psutil
import pytest

from pytest_hermes_kernel.plugin import crashes
from pytest_hermes_kernel.plugin.crashes import _crashes, pytest_testnodedown, pytest_testnodeready, reap_local
from pytest_hermes_kernel.plugin.settings import settings_key
from pytest_hermes_kernel.procs import start_time
from tests.support import kernel_process, wait_until

Start = Callable[..., subprocess.Popen[bytes]]


@pytest.fixture
def start() -> Iterator[Start]:
    """``start(host_pid, **env)``: a kernel-like process of that host (:func:`tests.support.kernel_process`),
    waited for until its environment shows its marker; ``start(None)``: a plain ``sleep``. Each
    is ended after the test if it still runs."""
    procs: list[subprocess.Popen[bytes]] = []

    def started(host_pid: int | None, **env: str) -> subprocess.Popen[bytes]:
        if host_pid is None:
            procs.append(subprocess.Popen(["sleep", "300"], start_new_session=True))
            return procs[-1]
        proc = kernel_process(host_pid, **env)
        procs.append(proc)
        wait_until(lambda: _marked(proc), 5.0, what="the process to have exec'd with its marker")
        return proc

    yield started
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


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


def _node(pid: int, **spec: object) -> SimpleNamespace:
    """What the controller's hooks read of an xdist node: worker ``gw0`` with ``pid``, run as ``spec`` says."""
    node = SimpleNamespace(config=SimpleNamespace(stash=pytest.Stash()),
                           gateway=SimpleNamespace(id="gw0", spec=SimpleNamespace(**spec),
                                                   _rinfo=lambda: SimpleNamespace(pid=pid)))
    node.config.stash[settings_key] = SimpleNamespace(docker_hosts=None)
    return node


def test_the_reap_of_a_crashed_worker_spares_what_an_earlier_holder_of_its_pid_left(start: Start) -> None:
    host = _host_pid()
    older = start(host)
    worker_started = start_time(older.pid) + 0.05
    wait_until(lambda: _now() > worker_started + 0.02, 1.0, what="the worker's start to be past")
    newer = start(host)

    reaped = reap_local(host, since=worker_started)

    assert reaped == 1 and newer.wait(5) == -9
    assert older.poll() is None, "a process older than the crashed worker was killed as its kernel"


def test_a_wall_clock_set_back_after_the_worker_started_spares_none_of_its_kernels(start: Start, monkeypatch) -> None:
    """psutil's ``create_time`` is the boot time as the wall clock says it is now, plus the ticks
    since boot: the worker's was read when it came up, its kernels' when it crashed. A clock set
    back meanwhile (NTP, a VM resumed) made its kernels look older than it, and they were spared."""
    import psutil._pslinux as pslinux

    worker = start(None)
    node = _node(worker.pid, popen=True)
    pytest_testnodeready(node)
    kernel = start(worker.pid)
    real_boot_time = pslinux.boot_time
    monkeypatch.setattr(pslinux, "boot_time", lambda: real_boot_time() - 5.0)  # the clock set back 5 s

    reaped = reap_local(worker.pid, _crashes(node.config).started["gw0"])

    assert reaped == 1 and kernel.wait(5) == -9


def test_a_crashed_worker_on_another_machine_reaps_nothing_here(start: Start, monkeypatch) -> None:
    """``--tx ssh=host`` runs a worker elsewhere: its pid is that machine's. Taken for a pid of
    this one, the worker's crash killed local kernels whose host happened to have that number."""
    monkeypatch.setattr(crashes, "reap_in_containers", lambda *args: 0)  # this machine's part only
    host = start(None)  # a local kernel host with the remote pid's number
    node = _node(host.pid, popen=None, ssh="elsewhere")
    pytest_testnodeready(node)
    kernel = start(host.pid)

    pytest_testnodedown(node, error="worker 'gw0' crashed while running 'test_x.py::test_a'")

    assert _crashes(node.config).reaped == {}, "a local kernel was killed for a remote worker's crash"
    assert kernel.poll() is None


def test_a_kernel_the_crashed_worker_kept_for_post_mortem_is_left_to_its_ttl(start: Start, tmp_path) -> None:
    """``--hermes-keep-failed`` keeps a failed test's kernel past its worker on purpose; a later
    crash of that worker killed it with its other kernels (``hermes-kernel attach`` then found
    its runner gone), where ``hermes-kernel sweep`` leaves it until its TTL."""
    from pytest_hermes_kernel.containers import kept

    host, kept_id = _host_pid(), uuid.uuid4().hex
    now = time.time()
    kept.save(kept.KeptKernel(kernel_id=kept_id, transport="local", locator={}, token="t", nodeid="t.py::t",
                              kept_at=now, detached_at=now, ttl_s=3600.0, host_pid=host), str(tmp_path))
    keeping = {kept.TMPDIR_ENV: str(tmp_path)}
    kept_kernel, other = start(host, HERMES_KERNEL_ID=kept_id, **keeping), start(host, **keeping)

    reaped = reap_local(host)

    assert reaped == 1 and other.wait(5) == -9
    assert kept_kernel.poll() is None, "the kept kernel was killed with the crashed worker's others"
