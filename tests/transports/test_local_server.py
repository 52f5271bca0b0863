"""The local kernel server (issue #11): kernels forked from one long-lived runner, and everything
that must stay as it was with a spawned runner.

A forked kernel shares nothing with its server or its siblings (fds, threads, random state; the
string hash seed is shared, as documented), its host's death ends it and the server, a server that
is gone is replaced, one that refuses makes the transport spawn the runner and say so in the
first result's ``kernel.note``, and idle servers end by themselves, bounded in number.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pytest_hermes_kernel import KernelHandle, KernelOptions, start_kernel
from pytest_hermes_kernel.procs import pid_alive
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import kernels_shut_down_after, wait_until  # noqa: F401 - the kernels fixture

FDS_OF = "import os; sorted(os.readlink(f'/proc/self/fd/{n}').split(':')[0] for n in os.listdir('/proc/self/fd'))"


@pytest.fixture
def transports() -> Iterator[list[LocalTransport]]:
    """Transports made by a test, closed (with their kernels shut down first) after it."""
    made: list[LocalTransport] = []
    yield made
    for t in made:
        t.close()


def _local(transports: list[LocalTransport], **options: object) -> LocalTransport:
    transport = LocalTransport(**options)  # type: ignore[arg-type]
    transports.append(transport)
    return transport


def _kernel(kernels: list[KernelHandle], transport: LocalTransport, **options: object) -> KernelHandle:
    handle = start_kernel(transport, **options)  # type: ignore[arg-type]
    kernels.append(handle)
    return handle


def _fd_kinds(k: KernelHandle) -> list[str]:
    """What the runner's fds point at: ``pipe``, ``socket``, files (its own kernel dir as ``KDIR``)."""
    pid = k.runner_pid
    links = [os.readlink(f"/proc/{pid}/fd/{n}") for n in os.listdir(f"/proc/{pid}/fd")]
    return sorted(link.split(":")[0].replace(k.launched.kernel_dir, "KDIR") for link in links)


def test_kernels_are_forked_by_one_server_and_hold_what_a_spawned_kernel_holds(transports, kernels):
    forked = _local(transports)
    a, b = _kernel(kernels, forked), _kernel(kernels, forked)
    spawned = _kernel(kernels, _local(transports, server=False))

    (server,) = forked.server_pids()
    assert [psutil.Process(k.runner_pid).ppid() for k in (a, b)] == [server, server]
    assert psutil.Process(spawned.runner_pid).ppid() == os.getpid()
    for k in (a, b):  # the same fds as a spawned kernel: nothing of the server's or a sibling's
        assert _fd_kinds(k) == _fd_kinds(spawned)
        assert k.execute(FDS_OF).value == spawned.execute(FDS_OF).value
        assert k.execute("import threading; threading.active_count()").value == "1"
        assert not [p for p in psutil.Process(k.runner_pid).open_files() if "server" in p.path]
    draws = {k.execute("import random; random.random()").value for k in (a, b, spawned)}
    assert len(draws) == 3, "every kernel has its own random state"
    assert a.execute("hash('hermes')").value == b.execute("hash('hermes')").value  # shared hash seed (documented)


def test_a_forked_kernel_carries_its_own_id_where_the_probes_look(transports, kernels):
    k = _kernel(kernels, _local(transports))

    assert {int(line.split(":")[0]) for line in k.transport.kernel_processes(k.kernel_id)} == {k.runner_pid, k.pid}
    assert k.execute("import os; os.environ['HERMES_KERNEL_ID']").value == repr(k.kernel_id)


def test_a_refusing_server_means_a_plain_spawn_said_in_the_first_result(transports, kernels):
    transport = _local(transports)
    handle = KernelHandle(transport, KernelOptions(), kernel_id="k" * 60)  # too long for the server's slot
    kernels.append(handle.start())

    first, second = handle.execute("1"), handle.execute("2")

    assert "kernel server unavailable" in first.kernel.note and "plain spawn" in first.kernel.note
    assert second.kernel.note == ""  # said once
    assert psutil.Process(handle.runner_pid).ppid() == os.getpid()


def test_a_server_that_died_is_replaced_and_its_kernels_live_on(transports, kernels):
    transport = _local(transports)
    a = _kernel(kernels, transport)
    a.execute("x = 1")
    (server,) = transport.server_pids()

    os.kill(server, signal.SIGKILL)
    wait_until(lambda: not pid_alive(server), 5.0, what="the killed server to be gone")

    assert a.execute("x").value == "1"  # a kernel does not depend on its server
    b = _kernel(kernels, transport)
    assert b.execute("1").kernel.note == ""
    assert transport.server_pids() and transport.server_pids() != [server]


def test_an_idle_server_ends_by_itself_and_the_next_start_gets_a_new_one(transports):
    transport = _local(transports, server_idle_timeout=0.5)
    with start_kernel(transport) as k:
        k.execute("1")
    (server,) = transport.server_pids()

    wait_until(lambda: not pid_alive(server), 5.0, what="the idle server to exit")
    with start_kernel(transport) as k:
        assert k.execute("1").kernel.note == ""
    assert transport.server_pids() != [server]


def test_a_long_lived_server_keeps_no_record_of_every_kernel_it_ever_forked(transports, kernels, monkeypatch):
    """The host kept the pid of every kernel a server forked while the server lived (to tell them
    from what it adopted): one more per kernel, for days on a busy host. Past ``FORKED_KEPT`` the
    record keeps those still running."""
    from pytest_hermes_kernel.transports import local_server

    monkeypatch.setattr(local_server, "FORKED_KEPT", 8, raising=False)
    transport = _local(transports)
    live = _kernel(kernels, transport)  # runs all along: its pid stays in the record
    for _ in range(40):
        with start_kernel(transport) as k:
            assert k.execute("1").value == "1"
    (server,) = transport._servers._servers.values()

    assert len(server.forked) <= 16, f"{len(server.forked)} pids kept after 41 kernels, 1 running"
    assert live.runner_pid in server.forked and live.execute("2").value == "2"


def test_kernels_started_at_once_while_the_record_is_pruned_all_stay_in_it(transports, kernels, monkeypatch):
    """The record was pruned outside the server's lock: a scan of the process table from before
    another thread's fork dropped that thread's running kernel, which the server's close then
    counted as adopted (found by the review of 2026-12-05). Every start prunes here."""
    import threading

    from pytest_hermes_kernel.transports import local_server

    monkeypatch.setattr(local_server, "FORKED_KEPT", 0, raising=False)
    transport = _local(transports)
    _kernel(kernels, transport)
    (server,) = transport._servers._servers.values()
    for _ in range(6):
        started: list[KernelHandle] = []
        threads = [threading.Thread(target=lambda: started.append(_kernel(kernels, transport))) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60.0)
        dropped = [k.runner_pid for k in started if k.runner_pid not in server.forked]
        assert not dropped, f"running kernels {dropped} dropped from their server's record of what it forked"
        for k in started:
            k.shutdown()


def test_servers_are_bounded_in_number(transports, kernels, tmp_path: Path):
    other = tmp_path / "python3"
    other.symlink_to(sys.executable)  # another interpreter path: a server of its own
    transport = _local(transports, max_servers=1)
    a = _kernel(kernels, transport)
    (first,) = transport.server_pids()

    b = _kernel(kernels, transport, python=str(other))

    (second,) = transport.server_pids()
    assert second != first
    wait_until(lambda: not pid_alive(first), 5.0, what="the least recently used server to be closed")
    assert (a.execute("1").value, b.execute("2").value) == ("1", "2")


HOST = textwrap.dedent("""
    import json, sys, time
    from pytest_hermes_kernel import start_kernel
    from pytest_hermes_kernel.transports.local import LocalTransport
    t = LocalTransport()
    ks = [start_kernel(t) for _ in range(2)]
    for k in ks:
        k.execute("1")
    print(json.dumps({"server": t.server_pids(), "kernels": [p for k in ks for p in (k.runner_pid, k.pid)]}), flush=True)
    time.sleep(120)
""")


def test_host_death_by_sigkill_ends_the_server_and_every_kernel_it_forked():
    host = subprocess.Popen([sys.executable, "-c", HOST], stdout=subprocess.PIPE, text=True)
    try:
        seen = json.loads(host.stdout.readline())  # type: ignore[union-attr]
    finally:
        host.kill()
        host.wait()
        host.stdout.close()  # type: ignore[union-attr]
    pids = seen["server"] + seen["kernels"]
    assert len(pids) == 5

    wait_until(lambda: not [p for p in pids if pid_alive(p)], 5.0, what="server and kernels to end with their host")


def test_a_forked_runner_closed_while_another_thread_waits_on_it_answers(monkeypatch):
    """A shutdown closes the runner's pidfd while a cell's thread asks whether the runner lives
    (the channel broke under the cell): that thread got ``OSError: [Errno 9] Bad file descriptor``
    from ``select`` (or, with the number reused, waited on an unrelated file)."""
    from pytest_hermes_kernel.transports import local

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    runner = local.ForkedRunner(child.pid, server=None)
    assert runner.pidfd is not None, "this kernel has pidfd_open (Linux >= 5.3)"
    real_select = local.select.select

    def close_first(*args):  # the other thread's close() lands between reading the fd and selecting
        runner.close()
        return real_select(*args)

    monkeypatch.setattr(local.select, "select", close_first)
    try:
        assert runner.alive(), "the runner still runs"
        child.kill()
        child.wait()
        assert not runner.alive(), "its end is seen after the close"
    finally:
        child.kill()
        child.wait()
