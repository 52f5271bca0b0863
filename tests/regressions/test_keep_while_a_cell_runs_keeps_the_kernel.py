"""``keep()`` while a cell ran (from another thread, or a tool of that cell) killed the kernel it
said it kept.

``keep()`` returned ``ExitInfo(step="kept", note="kept for post-mortem: it ends after 60 s without
a client")``, but the cell's thread saw its channel close (``detached: the kernel is kept``) and,
as for any channel lost for good, killed the runner: nothing was left to attach to, and the
cell's note said "the kernel was shut down while the cell ran ... (runner still alive; killed)".
A kept runner is now left running, its cell going on there; the cell's result says it was kept.
"""

from __future__ import annotations

import threading

import pytest

from pytest_hermes_kernel.kernel.handle import attach_kept
from tests.support import wait_until


@pytest.mark.hermes_transports("local", "docker", "ssh")
def test_keep_while_a_cell_runs_leaves_the_kernel_and_its_cell_running(hermes_kernel_factory):
    kernel = hermes_kernel_factory(report_running=True)
    running = threading.Event()
    kernel.add_listener(lambda event, _kernel, _payload: event == "running" and running.set())
    where = kernel.transport.locator(kernel.launched)
    results = []
    cell = threading.Thread(target=lambda: results.append(
        kernel.execute("import time\ntime.sleep(1.5)\nafter = 'ran on in the kept kernel'")))
    cell.start()
    assert running.wait(10.0), "the cell did not start"

    info = kernel.keep(60.0)
    cell.join(30)

    assert info.step == "kept"
    [result] = results
    assert result.status == "died" and result.kernel.reason == "reset", result.summary()
    assert "kept for post-mortem while the cell ran" in result.kernel.note, result.kernel.note
    again = attach_kept(kernel.transport, where, kernel_id=kernel.kernel_id, token=kernel.token)
    try:
        wait_until(lambda: again.execute("'after' in globals()").value == "True", 15.0, what="the kept cell to end")
        assert again.execute("after").value == "'ran on in the kept kernel'"
    finally:
        again.shutdown()


def test_keep_from_a_tool_of_the_running_cell_is_the_cells_tool_error(hermes_kernel_factory):
    """From a tool of the running cell, ``keep()`` is refused (as ``execute()`` there is): the tool's
    answer could not reach the kept kernel, whose cell waited in the call for ever, the runner
    refusing every later cell ("a cell is already running on this kernel")."""
    handle: list = []
    kernel = hermes_kernel_factory(tools={"keep_me": lambda: handle[0].keep(60.0)})
    handle.append(kernel)
    kernel.execute("kept = 'yes'")

    result = kernel.execute("import hermes_tools\nhermes_tools.keep_me()", timeout=30)

    assert (result.status, result.ename) == ("error", "ToolError"), result.summary()
    assert "ConfigError: a tool cannot keep kernel" in result.evalue, result.evalue
    after = kernel.execute("kept")
    assert after.value == "'yes'" and not after.kernel.state_lost
