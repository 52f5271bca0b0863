"""Contract: a kernel that dies while it starts fails ``start`` at once, saying how (B32).

The runner's interpreter is made to die before the runner's first line runs (``PYTHONHOME``
pointing nowhere: CPython cannot import ``encodings`` and exits with code 1), with a
``start_timeout`` of 120 s: the start error must come within seconds, name the exit status and
carry the tail of the interpreter's stderr, and no process of the kernel may be left.
"""

from __future__ import annotations

import re
import time

import pytest

from pytest_hermes_kernel.errors import KernelStartError

#: Seconds a start may take to report a runner that died at once (the case says ~1-2 s; the
#: rest is a loaded 2-core machine and a container exec), against a 120 s start timeout.
FAIL_FAST_S = 8.0
EXIT_STATUS = re.compile(r"exit (?:code|status)? ?1\b")


def test_runner_dying_at_start_fails_fast_with_exit_status_and_stderr(kernel_factory, hermes_transport):
    started = time.monotonic()

    with pytest.raises(KernelStartError) as info:
        kernel_factory(env={"PYTHONHOME": "/nonexistent/hermes-b32"}, start_timeout=120)

    elapsed = time.monotonic() - started
    text = str(info.value)
    assert elapsed < FAIL_FAST_S, f"start took {elapsed:.1f} s to fail: {text}"
    assert EXIT_STATUS.search(text), text
    assert "encodings" in text, text  # the tail of the interpreter's stderr
    assert hermes_transport.kernel_processes(info.value.kernel_id) == []  # nothing left behind
