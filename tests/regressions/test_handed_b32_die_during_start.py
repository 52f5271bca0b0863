"""Handed case B32: a kernel that dies during start made ``start()`` wait for the whole start
timeout (or forever). Local variants of the case (the contract suite runs the transport-neutral
one on every backend): a ``sitecustomize`` on ``PYTHONPATH`` that writes ``boom`` and exits, and
one that leaves with ``os._exit(0)`` before the runner says hello. The ``PYTHONPATH`` is the
interpreter's (``python=``): a kernel's own ``env`` never changes how its runner starts. Such an
interpreter ends the kernel server too, so those starts take the spawn path; the last case is
a runner that a kernel server forked (every default local start) dying before its hello.
"""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.procs import processes_with_env
from pytest_hermes_kernel.transports.local import LocalTransport
from pytest_hermes_kernel.transports.local_server import LocalServers
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


def test_a_runner_forked_by_a_kernel_server_that_dies_before_its_hello_fails_the_start(monkeypatch):
    """Its log cannot be opened (as on a host whose disk filled), so it exits 70 before its hello.
    The server closes its copy of the kernel's channel once it forked the runner, so the death
    ends the host's wait for the hello; a server that kept it open left the start waiting its
    whole ``start_timeout`` and then said only "did not say hello within 120 s"."""
    spawn, forked = LocalServers.spawn, []

    def spawn_without_a_log(self, python, env, config, channel):  # noqa: ANN001, ANN202 - LocalServers.spawn's
        pid_and_server = spawn(self, python, env, {**config, "log": "/nonexistent/hermes-b32/runner.log"}, channel)
        forked.append(pid_and_server[0])
        return pid_and_server

    monkeypatch.setattr(LocalServers, "spawn", spawn_without_a_log)
    transport = LocalTransport()
    try:
        with pytest.raises(KernelStartError) as info:
            start_kernel(transport, start_timeout=120)
    finally:
        transport.close()

    text = str(info.value)
    assert "died during start (exit code 70)" in text, text
    assert info.value.exit_code == 70 and len(forked) == 1, forked  # (the server's fork, not a spawn's)
    assert processes_with_env("HERMES_KERNEL_ID", info.value.kernel_id) == []
