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
