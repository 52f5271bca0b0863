"""Contract: a stack overflow is a classified crash, deep recursion an ordinary error (B49).

A C-level stack overflow (``__bool__`` calling ``bool(self)`` under a raised recursion limit:
each level costs C stack, so the 8 MiB main-thread stack runs out first on CPython 3.8-3.11;
3.12 and 3.13 stop it with their own C recursion limit first, a ``RecursionError``, unless the
stack is smaller: the cell lowers ``RLIMIT_STACK`` to 256 KiB, so it overflows on every
interpreter the runner supports) kills the worker with SIGSEGV: the
cell is ``died`` with ``signal=11``, a "stack overflow?" note and the faulthandler traceback at
the end of stderr; never OOM or a transport drop. The same recursion under the default limit
is a ``RecursionError`` with the kernel and its globals intact. A worker killed between cells
inside a runner that lives on (B30) is reported dead on the next cell, never alive. A cell past
the ``hermes_oom`` memory limit is ``died`` with reason ``oom_killed``, never a plain SIGKILL: a
transport that hands the runner a config of its own making with the wrong ``oom_counter_file``
(the limit's OOM-kill counter) passed the whole suite while every OOM kill on it read "killed by
signal 9" (``tests/plugin/test_contract_catches_an_oom_reported_as_a_plain_kill.py``).
"""

from __future__ import annotations

import signal
import time

import pytest

from ._probes import reaped_in_kernel, signal_in_kernel, wait_until

#: Seconds the cell after a worker's death may take (a fresh worker forks in ~0.1 s).
DEATH_SEEN_S = 5.0
#: The memory limit of the OOM case: the marker's floor is 16 MiB; this leaves the interpreter room.
OOM_LIMIT_BYTES = 128 << 20
#: A cell that takes memory until the limit's OOM killer ends it (32 MiB at a time, each page touched).
HOG = "hog = []\nwhile True: hog.append(b'x' * (32 << 20))"
#: Seconds the hog may take to meet the OOM killer (a loaded machine, a container's swap).
HOG_BUDGET_S = 120.0

OVERFLOW = """\
import resource, sys
_, hard = resource.getrlimit(resource.RLIMIT_STACK)
small = 256 << 10 if hard == resource.RLIM_INFINITY else min(256 << 10, hard)
resource.setrlimit(resource.RLIMIT_STACK, (small, hard))
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


def test_worker_killed_between_cells_is_never_reported_alive(kernel):
    """B30: the interpreter dies while its wrapper (the runner) lives on: the next cell says so
    at once, with the signal, instead of hanging or running on a corpse."""
    kernel.execute("keep = 1")
    pid = kernel.worker_pid
    signal_in_kernel(kernel, pid, signal.SIGKILL)
    wait_until(lambda: reaped_in_kernel(kernel, pid), 5.0, what=f"worker {pid} dead and reaped by its runner")
    started = time.monotonic()

    r = kernel.execute("'keep' in globals()")

    assert time.monotonic() - started < DEATH_SEEN_S, r.summary()
    assert r.kernel.state_lost and r.kernel.reason == "died" and r.kernel.signal == signal.SIGKILL, r.summary()
    assert r.value == "False" and kernel.worker_pid != pid


@pytest.mark.hermes_oom(limit_bytes=OOM_LIMIT_BYTES)
def test_a_cell_past_the_memory_limit_is_reported_oom_killed(kernel):
    """The kernel runs under the ``hermes_oom`` limit; a cell that passes it is ``oom_killed``
    (the runner reads the limit's OOM-kill counter from the config's ``oom_counter_file``, else the
    one beside its ``cgroup_procs``), and
    the next cell runs on a fresh worker. Skips, with the marker's reason, where no limit can be set."""
    kernel.execute("keep = 1")

    r = kernel.execute(HOG, timeout=HOG_BUDGET_S)

    assert r.status == "died", r.summary()
    assert r.kernel.reason == "oom_killed" and r.kernel.oom_killed, (
        f"a cell past the kernel's memory limit must be reported oom_killed, not as a plain death: {r.summary()}. "
        "The runner tells an OOM kill from another SIGKILL by the counter file its config names "
        "(LaunchSpec.config['oom_counter_file'], else the one beside its 'cgroup_procs'): "
        "hand the runner the whole spec.config")
    after = kernel.execute("'keep' in globals()")
    assert after.value == "False" and after.kernel.state_lost, after.summary()
