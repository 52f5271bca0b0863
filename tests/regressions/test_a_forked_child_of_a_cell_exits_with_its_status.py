"""A process a cell forked (``os.fork()``) that ended by ``sys.exit(3)`` or an uncaught error exited 0.

The worker ends a forked child that comes back to it at the end of the cell's code with
``os._exit(0)`` (it must never return to the worker's loop). Whatever the child did, its parent
saw exit status 0: ``sys.exit(3)`` was 0, and an uncaught exception was 0 with its traceback
printed nowhere: a failed child passed as a good one. A Python program exits with its
``SystemExit`` code, and with 1 after printing the traceback of an uncaught error; so does the
child now.
"""

from __future__ import annotations

import pytest

FORK = """\
import os, sys
pid = os.fork()
if pid == 0:
    {child}
else:
    _, status = os.waitpid(pid, 0)
os.waitstatus_to_exitcode(status) if pid else None
"""

CHILDREN = {
    "sys.exit(3)": ("sys.exit(3)", "3", None),
    "sys.exit('bye')": ("sys.exit('bye')", "1", "bye\n"),
    "error": ("raise ValueError('the child failed')", "1", "ValueError: the child failed"),
    "ends": ("print('child ran')", "0", None),
}


@pytest.mark.parametrize("case", list(CHILDREN))
def test_the_parent_sees_the_childs_exit_status(hermes_kernel, case):
    child, status, stderr = CHILDREN[case]

    result = hermes_kernel.execute(FORK.format(child=child))

    assert (result.status, result.value) == ("ok", status), result.summary() + "\n" + result.stderr
    if stderr is not None:
        assert stderr in result.stderr
    assert not result.kernel.state_lost
