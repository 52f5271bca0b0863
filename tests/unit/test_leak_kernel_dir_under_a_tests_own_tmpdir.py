"""Found by the breaker session (2026-12-05): the kernel-dir probe looked only under the kernel
dir root of the moment of the check. A test that points ``TMPDIR`` at a dir of its own (a
``monkeypatch`` of it and of ``tempfile.tempdir``, as this repo's ``private_tmp`` does) makes its
local kernels' dirs there; the check runs after ``monkeypatch`` put ``TMPDIR`` back, so a dir the
test left (a runner it SIGKILLed, whose dir nothing removed) passed unseen. The probe looks
under every root this process made a kernel dir in."""

from __future__ import annotations

import os
import signal
import tempfile

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.leaks.probes import PROBES
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, wait_until


def test_a_kernel_dir_left_under_the_tests_own_tmpdir_is_reported_and_removed(tmp_path):
    checker = LeakChecker([p for p in PROBES if p.kind == "kernel dir"], grace=0.0)
    transport = LocalTransport(server=False)
    before = checker.before()
    with pytest.MonkeyPatch.context() as patch:  # the test's own TMPDIR, put back before its check
        patch.setenv("TMPDIR", str(tmp_path))
        patch.setattr(tempfile, "tempdir", None)
        kernel = start_kernel(transport)
    try:
        kdir = kernel.launched.kernel_dir
        assert kdir.startswith(str(tmp_path)), kdir
        os.kill(kernel.launched.pid, signal.SIGKILL)  # the runner, then its worker: nothing removes the dir
        os.kill(kernel.pid, signal.SIGKILL)
        wait_until(lambda: gone(kernel.launched.pid) and gone(kernel.pid), 5.0, what="the kernel to die")

        report = checker.after(before)
        assert kdir in report.leaks.get("kernel dir", {}).values(), report.format("test")
        checker.cleanup(report)
        assert not os.path.exists(kdir)
    finally:
        kernel.shutdown()
        transport.close()
