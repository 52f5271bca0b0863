"""``sys.exit(obj)`` whose ``obj.__str__`` (or ``__repr__``) fails was reported as a death.

The worker described the exit with ``str(code)`` and ``repr(code)`` outside any guard: the second
exception escaped the main loop and the worker exited with code 70 (``START_FAILED``), the cell
reported ``died`` with ``reason="died"`` and a traceback of the runner's own ``describe_exit`` on
its stderr. An interpreter ending that way exits with status 1 (its message failed): the cell is
``exited``, ``exit_code=1``, like any other non-int exit code.
"""

from __future__ import annotations

import pytest

BAD = """\
import sys
class Code:
    def __str__(self):
        raise {what}
    def __repr__(self):
        raise {what}
sys.exit(Code())
"""


@pytest.mark.parametrize("what", ["ValueError('no message')", "KeyboardInterrupt", "SystemExit(3)"])
def test_an_exit_code_whose_str_fails_is_an_exit_with_status_1(hermes_kernel_factory, what):
    kernel = hermes_kernel_factory()

    result = kernel.execute(BAD.format(what=what))

    assert (result.status, result.ename) == ("exited", "SystemExit"), result.summary()
    assert (result.kernel.reason, result.kernel.exit_code) == ("exited", 1), result.summary()
    assert "describe_exit" not in result.stderr and "hermes_kernel_runner" not in result.stderr
    assert "str failed" in result.evalue
    assert kernel.execute("1 + 1").value == "2"
