"""Found by a breaker helper (2026-12-05, hostile cells): a cell that set a trace function which
raises (``sys.settrace`` with a buggy tracer, as a home-made debugger or coverage hook may have)
ended the worker: the tracer traced the runner's own code after the cell's, raised there, and
the cell came back ``died``, exit code 70, its namespace lost. The worker now sets a cell's trace
function aside while its own code runs and puts it back for the next cell's code: the tracer's
error comes in the cells' code, as in a script, and a tracer that works traces every later cell.
Every leg.
"""

from __future__ import annotations

import signal

from tests.support import signal_in_kernel

RAISES = "import sys\ndef tracer(*_):\n    raise ZeroDivisionError('the tracer')\nsys.settrace(tracer)"
RECORDS = ("import sys\nseen = []\ndef tracer(frame, event, arg):\n"
           "    if event == 'call':\n        seen.append(frame.f_code.co_name)\nsys.settrace(tracer)")


def test_a_tracer_that_raises_is_the_cells_error_and_the_kernel_lives(hermes_kernel):
    hermes_kernel.execute("kept = 'yes'")

    armed = hermes_kernel.execute(RAISES)
    hit = hermes_kernel.execute("1 + 1")
    after = hermes_kernel.execute("kept")

    assert armed.status == "ok" and not armed.kernel.state_lost, armed.summary()
    assert (hit.status, hit.ename, hit.evalue) == ("error", "ZeroDivisionError", "the tracer"), hit.summary()
    assert not hit.kernel.state_lost, hit.summary()
    assert (after.status, after.value) == ("ok", "'yes'") and not after.kernel.state_lost, after.summary()


def test_a_tracer_traces_the_cells_after_it_and_not_the_runner(hermes_kernel):
    assert hermes_kernel.execute(RECORDS).status == "ok"
    hermes_kernel.execute("def mine():\n    return 1\nmine()")

    r = hermes_kernel.execute("sys.settrace(None)\nsorted(set(seen))")

    assert r.status == "ok" and "'mine'" in r.value, r.summary()
    assert r.value.count("'") <= 8, r.value  # the cells' frames (<module>, mine), none of the runner's


TRACES_AND_RAISES_BETWEEN = (RECORDS + "\nimport signal\ndef on_usr1(*_):\n    raise TimeoutError('my own timeout')\n"
                             "signal.signal(signal.SIGUSR1, on_usr1)")


def test_a_handlers_error_raised_as_a_cell_begins_keeps_the_cells_tracer(hermes_kernel):
    """A cell's handler raised between cells: its error is the next cell's, raised before the
    cell's tracer was put back. Before, the tracer was then saved as the trace the cell left
    (none): it traced no later cell (``sys.gettrace() is tracer``: ``False``)."""
    assert hermes_kernel.execute(TRACES_AND_RAISES_BETWEEN).status == "ok"
    signal_in_kernel(hermes_kernel, hermes_kernel.pid, signal.SIGUSR1)

    hit = hermes_kernel.execute("1 + 1")
    after = hermes_kernel.execute("sys.gettrace() is tracer")

    assert (hit.status, hit.ename) == ("error", "TimeoutError"), hit.summary()
    assert (after.status, after.value) == ("ok", "True"), after.summary()
