"""Seen (a clean-clone run, 2026-12-06): a kernel given ``cgroup_procs=`` without
``oom_counter_file=`` (a transport of one's own that builds the runner's config and leaves the
counter out) reported its OOM kills as ``oom_killed`` in one run and as a plain SIGKILL
(``reason=died``) in the next. The supervisor looked the worker's memory cgroup up in
``/proc/<pid>/cgroup`` right after the fork (a spare kernel's at its claim), while the worker
joins ``cgroup_procs`` only after its fork (a spare's after its claim): a lookup that came first
found the cgroup the worker was leaving, whose counter an OOM kill under the kernel's limit never
moves. The counter is now read from the config: the one beside ``cgroup_procs``.

And a given ``oom_counter_file`` that holds no ``oom_kill`` count (a typo, the other cgroup
version's file name) made every OOM kill read as a plain SIGKILL, silently: the start now fails
naming it (``test_an_unreadable_oom_counter_file_fails_the_start_saying_why.py``)."""

from __future__ import annotations

import selectors

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.kernel.runner.procfs import configured_oom_file
from pytest_hermes_kernel.kernel.runner.worker_process import WorkerProcess
from pytest_hermes_kernel.transports import make_transport


@pytest.mark.parametrize("name", ["memory.events", "memory.oom_control"])
def test_the_counter_is_the_one_beside_the_cgroup_procs_file(tmp_path, name) -> None:
    (tmp_path / "cgroup.procs").write_text("")
    (tmp_path / name).write_text("oom_kill 0\n")
    config = {"cgroup_procs": str(tmp_path / "cgroup.procs")}

    assert configured_oom_file(config) == str(tmp_path / name)
    worker = WorkerProcess(config, selectors.DefaultSelector(), (-1, -1))
    assert worker.oom_file == str(tmp_path / name) and worker.oom_file_own, "known before any worker is forked"


def test_a_named_counter_wins_and_a_cgroup_without_memory_names_none(tmp_path) -> None:
    (tmp_path / "cgroup.procs").write_text("")  # a cpu or pids cgroup: no memory counter beside it
    procs = str(tmp_path / "cgroup.procs")

    assert configured_oom_file({"cgroup_procs": procs}) is None
    assert configured_oom_file({"cgroup_procs": procs, "oom_counter_file": "/x/memory.events"}) == "/x/memory.events"
    assert configured_oom_file({}) is None


@pytest.fixture
def memory_cgroup(hermes_faults):
    return hermes_faults.memory_cgroup(64 * 2**20)  # (skips where none can be made; removed after the test)


@pytest.mark.parametrize("where", ["local", "local-spawn"])
def test_a_kernel_given_only_cgroup_procs_reports_its_oom_kill(memory_cgroup, where) -> None:
    """Both paths: a spare kernel (the server's) joins at its claim, a spawned one after its fork."""
    transport = make_transport("local", **({"server": False} if where == "local-spawn" else {}))
    try:
        with start_kernel(transport, cgroup_procs=memory_cgroup.procs_file, start_timeout=30) as k:
            k.execute("keep = 1")
            r = k.execute("hog = []\nwhile True: hog.append(b'x' * 2**22)", timeout=120)
    finally:
        transport.close()

    assert r.status == "died" and r.kernel.reason == "oom_killed" and r.kernel.oom_killed, r.summary()
    assert memory_cgroup.oom_kills() >= 1
