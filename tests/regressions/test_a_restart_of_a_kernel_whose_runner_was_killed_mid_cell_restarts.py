"""``restart()`` called while a cell ran on a kernel whose runner had just been killed from
outside raised ``ChannelClosed: ... is closed: end of stream (the kernel runner or its relay is
gone)``, an error ``restart()`` does not document, though the next cell then ran on a new runner
(found by the random registry driver, ``tests/registry_fuzz.py``: a ``kill`` beside a ``restart``).

The restart asked the runner to kill the running cell's worker over the dead channel. Now a
runner found gone there needs no kill: the cell settles with it (``died``, ``reason="reset"``)
and the restart starts a new runner, reporting ``state_lost``, ``reason="reset"``.
"""

from __future__ import annotations

import pytest

from tests.support import run_in_thread, wait_request_sent


@pytest.mark.hermes_transports("local", "docker", "ssh", "filecell")
def test_the_restart_starts_a_new_runner(hermes_kernel) -> None:
    hermes_kernel.execute("x = 1")
    cell = run_in_thread(hermes_kernel, "import time\ntime.sleep(30)")
    wait_request_sent(hermes_kernel)
    hermes_kernel.transport.kill(hermes_kernel.launched)  # the runner is gone; the cell has not settled yet

    info = hermes_kernel.restart()

    assert info.state_lost and info.reason == "reset"
    result = cell.result(60.0)
    assert result.status == "died" and result.kernel.state_lost, result.summary()
    after = hermes_kernel.execute("'x' in globals()")
    assert after.value == "False" and after.kernel.state_lost, after.summary()
