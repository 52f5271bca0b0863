"""Found by a breaker helper (2026-12-05, hostile cells: a cell that never ends, and its restart):
``restart()`` while a cell ran reported the one reset twice as a ``lost`` event, once for the cut
cell's death (``reason="reset"``) and once for the restart itself, so the pytest summary's
"deaths and resets by reason" said ``reset=2`` for one restart (and every listener counting losses
counted two). A restart that cut a cell is now one ``lost`` event; one between cells still is one,
and a cell that ended by itself just before the restart's kill still has the reset reported.
"""

from __future__ import annotations

import threading

from tests.support import CellStarted


def test_one_restart_is_one_lost_event(hermes_kernel_factory):
    probe = CellStarted()
    kernel = hermes_kernel_factory(tools=probe.tools())
    lost: list[str] = []
    kernel.add_listener(lambda event, _k, payload: lost.append(payload.reason) if event == "lost" else None)
    box: list = []
    thread = threading.Thread(target=lambda: box.append(kernel.execute(CellStarted.CODE + "import time\ntime.sleep(30)")))
    thread.start()
    probe.wait()

    kernel.restart()
    thread.join(30)
    after = kernel.execute("1")
    kernel.restart()
    between = kernel.execute("2")

    assert box and (box[0].status, box[0].kernel.reason) == ("died", "reset"), box
    assert (after.kernel.state_lost, after.kernel.reason) == (True, "reset"), after.summary()
    assert (between.kernel.state_lost, between.kernel.reason) == (True, "reset"), between.summary()
    assert lost == ["reset", "reset"], lost
