"""A kernel whose worker had died (a cell's ``os._exit``, an OOM kill) and whose runner then died
too between cells (killed from outside, its host restarted) raised
``ChannelClosed: ... broke while sending: [Errno 32] Broken pipe`` on its next cell, and on every
cell after: the kernel was wedged for good, where ``execute`` says a lost transport is a result
(found by the random registry driver, ``tests/registry_fuzz.py``: an ``exit`` then a ``kill``).

The next cell asked the runner for a fresh worker over the dead channel, and only a worker's
start was tried. Now a runner found gone there is replaced as after any loss of the runner: the
cell runs on a new one and reports the loss it knew of (the worker's death).
"""

from __future__ import annotations

import pytest


@pytest.mark.hermes_transports("local", "docker", "ssh", "filecell")
def test_the_next_cell_runs_on_a_new_runner(hermes_kernel) -> None:
    died = hermes_kernel.execute("import os\nos._exit(3)")
    assert died.status in ("died", "exited"), died.summary()
    hermes_kernel.transport.kill(hermes_kernel.launched)  # the runner goes too, between cells

    result = hermes_kernel.execute("'ran'")

    assert result.status == "ok" and result.value == "'ran'", result.summary()
    assert result.kernel.state_lost and result.kernel.reason in ("died", "exited"), result.summary()
    assert hermes_kernel.execute("1 + 1").value == "2"
