"""Seen (a breaker helper running the kit in CI job containers, 2026-12-06): in a job container
with ``--memory 256m`` and ``-n 2``, one test's cell outgrew the limit (its kernel ``oom_killed``,
right) while another test's kernel slept in a cell that started no process at all; that cell came
back ``ok`` with the note ``the memory cgroup's OOM killer ended 2 processes while this cell ran
(not the worker: a subprocess of the cell, whose exit by signal 9 was an OOM kill)``. The counter
read was the container's, which every kernel of the job shares (so is a docker run container's,
and a host's cgroup pytest runs in), not one of the kernel's own as under ``hermes_oom``. Such a
note now says the cgroup is shared and whose kill it may have been; under ``hermes_oom`` it is
as before (``test_an_oom_kill_of_a_cells_subprocess_is_said.py``).

Made here without an engine: a job process in a memory cgroup with a limit, two local kernels
started in it without a marker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_hermes_kernel
from pytest_hermes_kernel.faults.cgroup import V1_ROOT, create_memory_cgroup

JOB = """
import threading
from pytest_hermes_kernel import start_kernel

with start_kernel("local", timeout=60) as quiet, start_kernel("local", timeout=60) as hog:
    quiet.execute("import time")
    started = threading.Event()
    result = {}

    def sleep():
        started.set()
        result["r"] = quiet.execute("time.sleep(3); 1")

    thread = threading.Thread(target=sleep)
    thread.start()
    started.wait()
    h = hog.execute("import time; time.sleep(0.5)\\nhog = []\\nwhile True: hog.append(b'x' * 2**22)")
    thread.join()
    print("HOG", h.status, h.kernel.reason)
    print("QUIET", result["r"].status, result["r"].value)
    print("NOTE", result["r"].kernel.note)
"""


def test_a_quiet_cells_note_does_not_claim_a_neighbours_oom_kill(tmp_path: Path) -> None:
    if os.geteuid() != 0 or not os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        pytest.skip("needs root and a cgroup v1 memory hierarchy to give the job a memory limit")
    cg = create_memory_cgroup(160 * 2**20)  # the job container's limit, shared by its kernels
    (tmp_path / "job.py").write_text(JOB)
    env = {**os.environ, "CG": cg.path, "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1])}
    try:
        ran = subprocess.run(["sh", "-c", f'echo $$ > "$CG/cgroup.procs" && exec {sys.executable} job.py'],
                             cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    finally:
        cg.remove()
    assert "HOG died oom_killed" in ran.stdout and "QUIET ok 1" in ran.stdout, ran.stdout + ran.stderr
    note = ran.stdout.partition("NOTE ")[2].strip()
    assert "a subprocess of the cell, whose exit by signal 9 was an OOM kill" not in note, note
    assert note.startswith("the memory cgroup's OOM killer ended 1 process while this cell ran"), note
    assert f"the cgroup is one this kernel shares, {cg.path}/memory.oom_control" in note, note
    assert "another kernel's too" in note, note
