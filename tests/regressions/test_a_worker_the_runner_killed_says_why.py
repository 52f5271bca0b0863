"""Found by a breaker helper (2026-12-05, hostile cells): the runner SIGKILLs a worker whose channel
it can no longer use (a cell wrote bytes that are no frame on it, or closed its fd and lived on),
and the cell came back ``died`` with the note "killed by signal 9" alone: as the OOM killer or a
``kill -9`` from outside would, with nothing pointing at the cell. The death note now adds "the
kernel runner killed the worker: ..." with the reason. The loss itself is inherent (a cell runs in
the worker's own process: see "What a cell can break" in docs/reference.md). Every leg.
"""

from __future__ import annotations

import pytest

CHANNEL = ("import sys\nw = next(m._WORKER for n, m in list(sys.modules.items())\n"
           "         if n.endswith('runner.worker_process') and getattr(m, '_WORKER', None))\nfd = w.sock.fileno()\n")
CELLS = {
    "writes bytes that are no frame": (CHANNEL + "import os\nos.write(fd, b'\\xff' * 64)\nimport time\ntime.sleep(5)",
                                       "it sent bytes that are no frame on its channel (a cell can write to it"),
    "closes its channel and lives on": (CHANNEL + "import os, time\nos.close(fd)\ntime.sleep(5)",
                                        "it closed its channel to the runner"),
}


@pytest.mark.parametrize("how", list(CELLS))
def test_the_death_note_names_the_runners_kill(hermes_kernel, how):
    code, why = CELLS[how]
    r = hermes_kernel.execute(code)
    after = hermes_kernel.execute("6 * 7")

    assert (r.status, r.kernel.state_lost, r.kernel.signal) == ("died", True, 9), r.summary()
    assert f"the kernel runner killed the worker: {why}" in r.kernel.note, r.kernel.note
    assert (after.status, after.value) == ("ok", "42"), after.summary()
