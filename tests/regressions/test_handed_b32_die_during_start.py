"""Handed case B32: a kernel that dies during start made ``start()`` wait for the whole start
timeout (or forever). Local variants of the case (the contract suite runs the transport-neutral
one on every backend): a ``sitecustomize`` on ``PYTHONPATH`` that writes ``boom`` and exits, and
one that leaves with ``os._exit(0)`` before the runner says hello. The ``PYTHONPATH`` is the
interpreter's (``python=``): a kernel's own ``env`` never changes how its runner starts.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.procs import processes_with_env
from tests.support import interpreter_with

FAIL_FAST_S = 3.0  # the case: within ~1-2 s of the death; the start timeout is 120 s


@pytest.mark.parametrize(("body", "status"), [
    ("import sys\nsys.stderr.write('boom\\n')\nsys.exit(3)\n", "exit code 1"),  # CPython: a failed site import exits 1
    ("import os, sys\nsys.stderr.write('boom\\n')\nsys.stderr.flush()\nos._exit(0)\n", "exit code 0"),
], ids=["sys_exit", "os_exit_0"])
def test_death_during_start_fails_fast_with_status_and_stderr(tmp_path, body, status):
    (tmp_path / "sitecustomize.py").write_text(body)
    started = time.monotonic()

    with pytest.raises(KernelStartError) as info:
        start_kernel("local", python=interpreter_with(tmp_path, {"PYTHONPATH": str(tmp_path)}), start_timeout=120)

    elapsed = time.monotonic() - started
    text = str(info.value)
    assert elapsed < FAIL_FAST_S, f"{elapsed:.1f} s: {text}"
    assert "died during start" in text and status in text and "boom" in text, text
    assert info.value.exit_code == int(status.rsplit(" ", 1)[1])
    assert processes_with_env("HERMES_KERNEL_ID", info.value.kernel_id) == []
