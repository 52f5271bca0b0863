"""Found by the breaker session (2026-12-05): the fd probe left out every path under ``/dev/``
(a terminal, ``/dev/null``: not leaks), and so a file in ``/dev/shm`` too: the fd of a POSIX
shared memory segment a test never closed (``shm_open``, what
``multiprocessing.shared_memory.SharedMemory`` holds until ``close()``) passed the leak check. A
file in ``/dev/shm`` is a file like any other now."""

from __future__ import annotations

import os
import tempfile

import pytest

from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.leaks.probes import Probe, file_descriptors


def test_a_shared_memory_file_left_open_is_reported():
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    checker = LeakChecker([Probe("fd", file_descriptors)], grace=0.0)
    before = checker.before()
    fd, path = tempfile.mkstemp(prefix="hermes-leak-", dir="/dev/shm")  # as shm_open makes it
    try:
        report = checker.after(before)
        assert any(desc.endswith(f"-> {path}") for desc in report.leaks.get("fd", {}).values()), report.format("test")
    finally:
        os.close(fd)
        os.unlink(path)
    assert not checker.after(before), "closed: nothing left"


def test_the_arena_of_multiprocessings_shared_heap_is_no_leak():
    """``multiprocessing.Value`` and ``Array`` share one heap per process, on arenas it keeps open
    for the process's life, unlinked (``/dev/shm/pym-<pid>-... (deleted)``): the first test to make
    one was reported as leaking two fds (``tests/unit/test_sharing.py``, after the line above)."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("no /dev/shm here")
    import multiprocessing
    from multiprocessing import heap

    def arenas() -> set[int]:
        return {a.fd for a in heap.BufferWrapper._heap._arenas if getattr(a, "fd", -1) >= 0}

    checker = LeakChecker([Probe("fd", file_descriptors)], grace=0.0)
    before, had = checker.before(), arenas()
    shared = multiprocessing.Array("b", 16 * 1024 * 1024)  # larger than any arena yet: a new one

    report = checker.after(before)

    assert len(shared) and arenas() - had, "no new arena in /dev/shm: nothing was checked"
    assert not report.leaks.get("fd"), report.format("test")
