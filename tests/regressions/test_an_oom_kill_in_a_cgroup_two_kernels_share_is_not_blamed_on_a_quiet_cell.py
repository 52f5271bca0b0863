"""Seen (a breaker helper, 2026-12-06): two kernels started in one memory cgroup (one
``hermes_faults.memory_cgroup()`` handed to both as ``cgroup_procs=``: a budget for the pair).
One's cell ran a subprocess that outgrew the limit; the other kernel's cell, a ``time.sleep``
that started no process, came back ``ok`` with the note ``the memory cgroup's OOM killer ended 1
process while this cell ran (not the worker: a subprocess of the cell, whose exit by signal 9 was
an OOM kill)``. A counter named by the kernel's config was taken as the kernel's alone, as
``hermes_oom``'s one-kernel group is. Once the counter rose, the runner now looks at who else is
in the group: another kernel's worker makes the note say the cgroup is shared, as it does for a
CI container's (``test_an_oom_kill_in_a_shared_cgroup_is_not_blamed_on_a_quiet_cell.py``); a
kernel alone in its group keeps the plain note (``test_an_oom_kill_of_a_cells_subprocess_is_said.py``).
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.kernel.runner.procfs import cgroup_strangers
from pytest_hermes_kernel.transports import make_transport

HOG = "hog = []\nwhile True: hog.append(b'x' * 2**22)"
SUBPROCESS_HOG = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {HOG!r}]).returncode"
BLAMED = "a subprocess of the cell, whose exit by signal 9 was an OOM kill"


@pytest.fixture
def memory_cgroup(hermes_faults):
    return hermes_faults.memory_cgroup(128 * 2**20)  # (skips where none can be made; removed after the test)


@pytest.mark.parametrize("where", ["local", "local-spawn"])
def test_a_quiet_cell_of_one_of_two_kernels_in_one_cgroup_is_not_blamed(memory_cgroup, where) -> None:
    transport = make_transport("local", **({"server": False} if where == "local-spawn" else {}))
    options = {"cgroup_procs": memory_cgroup.procs_file, "oom_counter_file": memory_cgroup.oom_counter_file,
               "start_timeout": 30}
    try:
        with start_kernel(transport, **options) as quiet, start_kernel(transport, **options) as hog:
            quiet.execute("import time")
            started, result = threading.Event(), {}

            def sleep() -> None:
                started.set()
                result["r"] = quiet.execute("time.sleep(4); 1")

            thread = threading.Thread(target=sleep)
            thread.start()
            started.wait()
            h = hog.execute("import time; time.sleep(0.5)\n" + SUBPROCESS_HOG, timeout=60)
            thread.join()
    finally:
        transport.close()

    assert h.status == "ok" and h.value == "-9", h.summary()
    q = result["r"]
    assert q.status == "ok" and q.value == "1", q.summary()
    assert memory_cgroup.oom_kills() == 1
    assert BLAMED not in q.kernel.note, q.kernel.note
    assert f"the cgroup is one this kernel shares, {memory_cgroup.oom_counter_file}" in q.kernel.note, q.kernel.note


def test_a_process_of_another_session_is_a_stranger(tmp_path) -> None:
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    ours, theirs = subprocess.Popen(sleep), subprocess.Popen(sleep, start_new_session=True)
    try:
        (tmp_path / "cgroup.procs").write_text(f"{ours.pid}\n")
        (tmp_path / "sub").mkdir()
        (tmp_path / "sub" / "cgroup.procs").write_text(f"{theirs.pid}\n")  # below it: counted too (v2)

        assert cgroup_strangers(str(tmp_path)) == [theirs.pid]
        (tmp_path / "sub" / "cgroup.procs").write_text("")
        assert cgroup_strangers(str(tmp_path)) == [], "a process of this session is the runner's own"
    finally:
        for process in (ours, theirs):
            process.kill()
            process.wait()
