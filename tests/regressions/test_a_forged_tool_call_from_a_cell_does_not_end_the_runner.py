"""Found by a breaker helper (2026-12-06, malformed input): a cell that wrote a ``tool_call`` frame
on its worker's channel with an id that is a list or an object (a worker's call ids are strings)
ended the kernel runner itself (``TypeError: unhashable type``): the cell came back ``died``,
"channel lost ... the kernel runner ended: exit code 70", nothing naming the cell's frame. The
runner now kills a worker that sends a call id that is no string, the note saying so, and the
kernel lives on. Every leg.
"""

from __future__ import annotations

import pytest

from tests.regressions.test_a_worker_the_runner_killed_says_why import CHANNEL


@pytest.mark.parametrize("call_id", [[1], {"a": 1}])
def test_the_runner_kills_the_worker_and_names_the_call_id(hermes_kernel, call_id):
    code = CHANNEL + (f"w.send({{'type': 'tool_call', 'cell': w.cell_id, 'id': {call_id!r}, 'name': 't', 'args': {{}}}})\n"
                      "import time\ntime.sleep(5)")

    r = hermes_kernel.execute(code)
    after = hermes_kernel.execute("6 * 7")

    assert (r.status, r.kernel.state_lost, r.kernel.signal) == ("died", True, 9), r.summary()
    assert f"the kernel runner killed the worker: its tool_call's id is {type(call_id).__name__}" in r.kernel.note, \
        r.kernel.note
    assert (after.status, after.value) == ("ok", "42"), after.summary()
