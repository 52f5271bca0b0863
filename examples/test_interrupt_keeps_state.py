"""``interrupt()`` stops the running cell with KeyboardInterrupt; the namespace is kept.

The cell runs in a background thread so that the test can interrupt it, the way a UI's stop
button or an agent's cancel would. To know the cell is busy before interrupting, the cell
calls a host tool, ``busy()``, after some work, that sets an event here (tools: see test_tool_calls.py).
"""

import threading

BUSY_LOOP = """
import hermes_tools, time
while True:
    done += 1
    if done == 5:
        hermes_tools.busy()  # tell the test: work is under way
    time.sleep(0.01)
"""


def test_interrupt_stops_the_cell_and_keeps_its_progress(hermes_kernel_factory):
    busy = threading.Event()
    kernel = hermes_kernel_factory(tools={"busy": busy.set})
    kernel.execute("done = 0")
    results = []
    cell = threading.Thread(target=lambda: results.append(kernel.execute(BUSY_LOOP)))
    cell.start()
    assert busy.wait(timeout=10), "the cell never started"

    kernel.interrupt()
    cell.join(timeout=10)

    [result] = results
    assert result.status == "interrupted" and result.ename == "KeyboardInterrupt"
    assert not result.kernel.state_lost
    # the work done before the interrupt is still in the namespace, on the same process
    after = kernel.execute("done >= 5")
    assert after.value == "True"
    assert after.kernel.pid == result.kernel.pid and after.kernel.generation == 0
