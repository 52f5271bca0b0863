"""A cell that replaced ``signal.getsignal`` made that cell and every later one fail.

After each cell the worker looks at the handlers cells set (``environ._guard_cell_handlers``),
and before the next one at those it guarded; it called ``signal.getsignal``, the module's
attribute, which a cell can replace. ``signal.getsignal = None`` ended that cell and every later
cell (``1 + 1`` too) ``error``, ``TypeError: 'NoneType' object is not callable``, raised in the
runner's own code, for the kernel's life. The worker now reads handlers through ``_signal``'s
own function, which no cell's assignment reaches; the cell's replacement stays the cell's.
"""

from __future__ import annotations


def test_a_replaced_signal_getsignal_does_not_reach_the_runner(hermes_kernel_factory):
    kernel = hermes_kernel_factory()
    kernel.execute("kept = 'yes'")

    replacing = kernel.execute("import signal; signal.getsignal = None")
    later = kernel.execute("1 + 1")
    still_theirs = kernel.execute("signal.getsignal is None and kept")

    for result in (replacing, later, still_theirs):
        assert result.status == "ok" and not result.kernel.state_lost, result.summary()
    assert later.value == "2"
    assert still_theirs.value == "'yes'"


def test_a_cells_own_handler_still_raises_in_its_next_cell_after_the_replacement(hermes_kernel_factory):
    """The guard still works: a cell's SIGALRM handler that fires between cells raises in the next cell."""
    kernel = hermes_kernel_factory()
    kernel.execute(
        "import signal, time\n"
        "def on_alarm(signum, frame):\n"
        "    raise TimeoutError('alarm went off')\n"
        "signal.signal(signal.SIGALRM, on_alarm)\n"
        "signal.getsignal = None\n"
        "signal.setitimer(signal.ITIMER_REAL, 0.05)\n")

    waited = kernel.execute("while True:\n    time.sleep(0.01)", timeout=10)

    assert (waited.status, waited.ename) == ("error", "TimeoutError"), waited.summary()
    assert not waited.kernel.state_lost
