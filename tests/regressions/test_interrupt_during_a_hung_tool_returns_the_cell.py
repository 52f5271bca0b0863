"""``interrupt()`` of a cell waiting on a host tool that hangs returns the cell: ``interrupted``,
its namespace kept, the call listed as still running.

The worker was interrupted at once, inside the call, but the host held the cell's result until
the tool's thread ended (3 s for a tool that took 3 s; never, for one that hangs, since a tool's
time pauses the cell's budget): the user's stop did not stop ``execute()``. The result now waits
for such a tool at most ``TOOLS_AFTER_CUT_S`` (0.5 s); what the tool returns later goes nowhere
(the worker ignores a result no call waits for), and the next cells and their tools run as usual.
"""

from __future__ import annotations

import threading

from tests.support import run_in_thread


def test_interrupt_of_a_cell_in_a_hung_tool_returns_the_cell(hermes_kernel_factory):
    started, release, returned = threading.Event(), threading.Event(), threading.Event()

    def hung() -> int:
        started.set()
        release.wait(60)
        returned.set()
        return 1

    kernel = hermes_kernel_factory(tools={"hung": hung, "add": lambda a, b: a + b})
    kernel.execute("kept = 1")
    try:
        cell = run_in_thread(kernel, "import hermes_tools\nx = hermes_tools.hung()")
        assert started.wait(15), "the tool was never called"
        kernel.interrupt()
        result = cell.result(timeout=15)  # (it waited for the tool: the tool waits for this test)
    finally:
        release.set()

    assert result.status == "interrupted" and not result.kernel.state_lost, result.summary()
    [call] = result.tool_calls
    assert call["name"] == "hung" and call["running"] and not call["ok"], call
    assert "still running" in call["error"]
    assert returned.wait(15)
    assert kernel.execute("kept, 'x' in dir()").value == "(1, False)"
    # the tool's late result goes nowhere: the next tool calls get their own
    again = kernel.execute("hermes_tools.add(a=1, b=2), hermes_tools.add(a=2, b=2)")
    assert again.value == "(3, 4)" and [c["ok"] for c in again.tool_calls] == [True, True], again.summary()
