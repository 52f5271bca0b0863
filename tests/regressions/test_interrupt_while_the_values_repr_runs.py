"""An interrupt while a cell's trailing value is turned into its ``repr`` was lost.

The worker marked the cell as ended before calling the value's ``__repr__``, so a SIGINT that
came meanwhile was taken for a late one and ignored: the cell ran its slow ``__repr__`` to the
end and came back ``ok`` (a ``__repr__`` that never returns ignored the watchdog's interrupt
too, and the kill cost the namespace). ``__repr__`` is the cell's code: now the interrupt ends it.
"""

from __future__ import annotations

import threading

SLOW_REPR = """\
class Slow:
    def __repr__(self):
        import hermes_tools, time
        hermes_tools.in_repr()
        time.sleep(30)
        return 'slow'
kept = 'yes'
"""


def test_an_interrupt_while_the_values_repr_runs_interrupts_the_cell_and_keeps_state(hermes_kernel_factory):
    in_repr = threading.Event()
    kernel = hermes_kernel_factory(tools={"in_repr": in_repr.set})
    kernel.execute(SLOW_REPR)
    results = []
    cell = threading.Thread(target=lambda: results.append(kernel.execute("Slow()")))
    cell.start()
    assert in_repr.wait(30), "the value's __repr__ never ran"

    kernel.interrupt()
    cell.join(10)

    assert results, "the interrupt did not end the cell's __repr__"
    [result] = results
    assert (result.status, result.ename) == ("interrupted", "KeyboardInterrupt"), result.summary()
    after = kernel.execute("kept")
    assert after.value == "'yes'" and not after.kernel.state_lost
