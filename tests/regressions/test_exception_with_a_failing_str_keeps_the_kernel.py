"""A cell raising an exception whose ``__str__`` itself fails ended the worker.

The worker described the error with ``str(exc)`` outside any guard, after the cell: the second
exception escaped the main loop and the worker exited with code 70, the namespace lost, the cell
reported ``died``. The message is now named as failed and the cell is an ``error`` like any other.
"""

from __future__ import annotations

import pytest

BAD = """\
class Bad(Exception):
    def __str__(self):
        raise {what}
raise Bad()
"""


@pytest.mark.parametrize("what", ["ValueError('no message')", "KeyboardInterrupt", "SystemExit(3)"])
def test_an_exception_whose_str_fails_is_the_cells_error_and_the_kernel_lives(hermes_kernel_factory, what):
    kernel = hermes_kernel_factory()
    kernel.execute("kept = 'yes'")

    result = kernel.execute(BAD.format(what=what))

    assert (result.status, result.ename) == ("error", "Bad"), result.summary()
    assert "str failed" in result.evalue and "Bad" in result.traceback
    after = kernel.execute("kept")
    assert after.value == "'yes'" and not after.kernel.state_lost
