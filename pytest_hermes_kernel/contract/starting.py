"""Contract: a kernel that dies while it starts fails ``start`` at once, saying how (B32).

The runner's interpreter does not exist where the kernel runs, with a ``start_timeout`` of
120 s: the start error must come within seconds, name the cause from the far side, say how it
ended (the exit status of the process that ran, or, where no process could even start, the OS
error of that exec: a local ``Popen`` of the interpreter itself), and no process of the kernel
may be left.
"""

from __future__ import annotations

import re
import time

import pytest

from pytest_hermes_kernel.errors import KernelStartError

#: Seconds a start may take to report a runner that died at once (the case says ~1-2 s; the
#: rest is a loaded 2-core machine and a container exec), against a 120 s start timeout.
FAIL_FAST_S = 8.0
MISSING = "/nonexistent/hermes-b32/python3"
CAUSE = re.compile(r"no such file|not found", re.IGNORECASE)
EXIT_STATUS = re.compile(r"exit (?:code|status)? ?\d+")
#: An exec that failed before any process ran (``FileNotFoundError``): no exit status to give.
EXEC_FAILED = re.compile(r"\[Errno \d+\]")


def test_runner_dying_at_start_fails_fast_with_exit_status_and_stderr(kernel_factory, hermes_transport):
    """The runner cannot start (its interpreter does not exist where the kernel runs: the case's
    "image without the interpreter" / "remote interpreter path that does not exist"). A kernel's
    own ``env`` cannot break its start any more (issue #9 point 7), so the interpreter does.
    The local regression test (tests/regressions/test_handed_b32_die_during_start.py) covers a
    runner that starts and dies, with its exit code and stderr tail."""
    started = time.monotonic()

    with pytest.raises(KernelStartError) as info:
        kernel_factory(python=MISSING, start_timeout=120)

    elapsed = time.monotonic() - started
    text = str(info.value)
    assert elapsed < FAIL_FAST_S, f"start took {elapsed:.1f} s to fail: {text}"
    assert MISSING in text and CAUSE.search(text), text  # the cause, from where the kernel runs
    assert EXIT_STATUS.search(text) or EXEC_FAILED.search(text), \
        f"the start error must say how the runner ended: its exit status, or the OS error of an exec that ran nothing: {text}"
    assert hermes_transport.kernel_processes(info.value.kernel_id) == []  # nothing left behind
