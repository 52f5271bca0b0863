"""Seen (a breaker helper reviewing f6a39a2, 2026-12-06): under ``hermes_oom`` on docker the kernel
runs in a fresh container of its own with the limit, yet a cell whose subprocess the OOM killer
ended got the note for a shared cgroup: ``... (not the worker; the cgroup is one this kernel shares,
/sys/fs/cgroup/memory/memory.oom_control: a subprocess of the cell, or another process there, another
kernel's too)``. f6a39a2 said "under hermes_oom it is as before", true on local only (where the
marker hands the runner its cgroup's counter); a fresh container (one per kernel) is the kernel's
alone, so the note names the cell's subprocess again, as on local.
"""

from __future__ import annotations

import pytest

HOG = ("import subprocess, sys\n"
       "p = subprocess.run([sys.executable, '-c', 'hog = []\\nwhile True: hog.append(bytearray(2**22))'])\n"
       "p.returncode")


@pytest.mark.hermes_transports("local", "docker")
@pytest.mark.hermes_oom(limit_bytes=128 * 2**20)
def test_an_oom_kill_in_a_kernels_own_container_is_its_cells_subprocess(hermes_kernel):
    result = hermes_kernel.execute(HOG)

    assert (result.status, result.value) == ("ok", "-9"), result.summary()
    assert result.kernel.note == ("the memory cgroup's OOM killer ended 1 process while this cell ran (not the "
                                  "worker: a subprocess of the cell, whose exit by signal 9 was an OOM kill)"), \
        result.summary()
