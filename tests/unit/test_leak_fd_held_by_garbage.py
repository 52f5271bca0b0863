"""Unit: a file descriptor that only unreachable objects hold is no leak.

Found by the breaker helper on other interpreters (2026-12-06): on a host Python 3.12 or 3.13,
``tests/plugin/test_fork_in_test.py``'s inner test (a ``multiprocessing`` fork with a
``SimpleQueue``, never closed) failed its leak check with "leaked fd: fd 16 -> pipe:[...]" (four
of them): from 3.12 on the queue's and the process's pipes are left in a reference cycle, freed by
the next garbage collection, which had not run yet. On 3.11 they went with the test's locals.
The checker now collects garbage once before it reports what still looks leaked.
"""

from __future__ import annotations

import gc
import os

from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.leaks.probes import Probe, file_descriptors


class _Closes:
    """An fd closed when its holder goes, without a ``ResourceWarning``."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __del__(self) -> None:
        os.close(self.fd)


def test_a_pipe_in_a_reference_cycle_is_not_reported() -> None:
    checker = LeakChecker([Probe("fd", file_descriptors)], grace=0.5)
    before = checker.before()
    was_enabled = gc.isenabled()
    gc.disable()  # (no automatic collection between the test's end and the check: as in a quiet process)
    try:
        read_end, write_end = os.pipe()
        cycle: list[object] = [_Closes(read_end), _Closes(write_end)]  # (as a multiprocessing Connection)
        cycle.append(cycle)
        del cycle

        report = checker.after(before)
    finally:
        if was_enabled:
            gc.enable()

    assert not report, report.format("t")


def test_a_pipe_still_held_is_reported() -> None:
    checker = LeakChecker([Probe("fd", file_descriptors)], grace=0.2)
    before = checker.before()
    read_end, write_end = os.pipe()
    try:
        report = checker.after(before)
        found = report.leaks.get("fd", {})
        assert all(any(i.startswith(f"fd:{fd}:pipe:") for i in found) for fd in (read_end, write_end)), found
    finally:
        os.close(read_end)
        os.close(write_end)
