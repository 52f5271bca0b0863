"""Found by a breaker helper (2026-12-05, hostile cells): a kernel that died between two cells (a
cell's ``signal.alarm(1)`` that went off after it returned, a thread of it that called
``os._exit``, a kill from outside) was reported by the next cell (``state_lost``,
``reason="died"``) and by the ``lost`` event, but ``KernelRegistry.stats["deaths"]`` stayed ``{}``:
it counted only cells that ended their kernel themselves, so two deaths read as none. Such a death
is now counted under its reason, once; a loss the next cell reports again (the earlier cell's own
death, an eviction) is not counted twice.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelKey
from tests.support import gone, wait_until

A = KernelKey(owner="a")
#: A death the cell arms for once ``{go}`` exists, which the test makes when it has the cell's result
#: (a 0.3-s timer's death that came first, the worker held up that long, was the cell's own: ``died``).
LATER = {
    "signal.alarm": "signal.alarm(1)",
    "a thread's os._exit": "os._exit(4)",
}
ARM = ("import os, signal, threading, time\ndef later():\n    while not os.path.exists({go!r}):\n"
       "        time.sleep(0.01)\n    {death}\nthreading.Thread(target=later, daemon=True).start()")


@pytest.mark.parametrize("how", list(LATER))
def test_a_death_between_cells_is_counted_once(make_registry, how, tmp_path):
    reg = make_registry(idle_timeout=None)
    assert reg.execute(A, "x = 1").status == "ok"
    pid = reg.get_or_start(A).worker_pid
    go = tmp_path / "go"
    assert reg.execute(A, ARM.format(go=str(go), death=LATER[how])).status == "ok"
    go.touch()
    wait_until(lambda: gone(pid), 10.0, what="the worker to die between cells")

    told = reg.execute(A, "2")
    again = reg.execute(A, "3")

    assert (told.status, told.kernel.state_lost, told.kernel.reason) == ("ok", True, "died"), told.summary()
    assert not again.kernel.state_lost, again.summary()
    assert reg.stats["deaths"] == {"died": 1}


def test_a_cells_own_death_reported_again_by_the_next_cell_is_counted_once(make_registry):
    reg = make_registry(idle_timeout=None)
    assert reg.execute(A, "import os\nos._exit(5)").status == "died"

    after = reg.execute(A, "1")

    assert after.kernel.state_lost and after.kernel.reason == "died", after.summary()
    assert reg.stats["deaths"] == {"died": 1}
