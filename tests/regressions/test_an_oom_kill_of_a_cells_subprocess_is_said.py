"""A cell whose subprocess the OOM killer ended came back ``ok`` without a word.

Found by the user-reproduction round (2026-12-06): an agent's tool ran a memory-hungry
subprocess in its cell under ``hermes_oom``; the kernel's memory cgroup OOM-killed that child,
not the worker, and the cell returned ``status='ok'``, ``oom_killed=False``, no note: only the
child's return code ``-9`` hinted at it, which reads as any SIGKILL. The runner reads the
cgroup's OOM-kill counter at the cell's start already (for a worker's death); now it reads it
at the cell's end too, and a cell that lived on says how many processes the OOM killer ended
while it ran (``kernel.note``; ``oom_killed`` stays the worker's own death).
"""

from __future__ import annotations

import pytest

HOG = ("import subprocess, sys\n"
       "p = subprocess.run([sys.executable, '-c', 'hog = []\\nwhile True: hog.append(bytearray(2**22))'])\n"
       "p.returncode")


@pytest.mark.hermes_oom(limit_bytes=128 * 2**20)
def test_a_subprocess_the_oom_killer_ended_is_named_on_its_cell(hermes_kernel):
    hermes_kernel.execute("kept = 1")

    result = hermes_kernel.execute(HOG)

    assert (result.status, result.value) == ("ok", "-9"), result.summary()
    assert not result.kernel.oom_killed and not result.kernel.state_lost, result.summary()
    assert "the memory cgroup's OOM killer ended 1 process while this cell ran" in result.kernel.note, result.summary()
    after = hermes_kernel.execute("kept")
    assert after.value == "1" and after.kernel.note == "", after.summary()  # said once, on its own cell


@pytest.mark.hermes_oom(limit_bytes=128 * 2**20)
def test_the_workers_own_oom_death_is_still_oom_killed(hermes_kernel):
    result = hermes_kernel.execute("hog = []\nwhile True: hog.append(bytearray(2**22))")
    assert result.status == "died" and result.kernel.oom_killed, result.summary()
    assert "while this cell ran (not the worker" not in result.kernel.note, result.summary()
