"""Contract: a stack overflow is a classified crash, deep recursion an ordinary error (B49).

A C-level stack overflow (``__bool__`` calling ``bool(self)`` under a raised recursion limit:
each level costs C stack, so the 8 MiB main-thread stack runs out first on CPython 3.11, the
interpreter every transport of the matrix runs) kills the worker with SIGSEGV: the
cell is ``died`` with ``signal=11``, a "stack overflow?" note and the faulthandler traceback at
the end of stderr; never OOM or a transport drop. The same recursion under the default limit
is a ``RecursionError`` with the kernel and its globals intact.
"""

from __future__ import annotations

OVERFLOW = """\
import sys
sys.setrecursionlimit(10**6)
class Deep:
    def __bool__(self):
        return bool(self)
bool(Deep())
"""

RECURSE = """\
class Deep:
    def __bool__(self):
        return bool(self)
bool(Deep())
"""


def test_stack_overflow_is_died_with_sigsegv_and_a_note(kernel):
    r = kernel.execute(OVERFLOW)

    assert r.status == "died", r.summary()
    assert r.kernel.signal == 11 and r.kernel.reason == "died"
    assert "stack overflow?" in r.kernel.note
    assert not r.kernel.oom_killed
    assert "Fatal Python error: Segmentation fault" in r.stderr and "__bool__" in r.stderr
    after = kernel.execute("1 + 1")
    assert after.value == "2" and after.kernel.state_lost


def test_deep_recursion_is_a_recursion_error_and_keeps_the_kernel(kernel):
    kernel.execute("keep = 'me'")

    r = kernel.execute(RECURSE)

    assert r.status == "error" and r.ename == "RecursionError", r.summary()
    after = kernel.execute("keep")
    assert after.value == "'me'" and not after.kernel.state_lost
