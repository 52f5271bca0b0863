"""``hermes-kernel sweep --kept --kernel ID`` on a kept local kernel whose runner is gone (killed:
by an older sweep run with another ``TMPDIR``, or by hand) removes its kernel dir too, as the
README says ("ends it: nothing of it is left"). It removed only the record and left
``/tmp/hermes-kernel-<host pid>-<random>`` behind: the runner, which removes its dir when it
ends, never got to. Now the transport removes what a gone kept kernel left
(``Transport.cleanup_kept``)."""

from __future__ import annotations

import os
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.postmortem import sweep_kept
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, wait_until


@pytest.fixture
def short_kernel_dir_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Kernel dirs in a short path of their own: a unix socket path (the kept socket) has 108 bytes."""
    root = tempfile.mkdtemp(prefix="hk-", dir="/tmp")
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", root)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("killed", [True, False], ids=["runner-killed", "runner-alive"])
def test_sweep_kept_leaves_nothing_of_a_local_kernel(server: bool, killed: bool, private_tmp: Path,
                                                      short_kernel_dir_root: str) -> None:
    transport = LocalTransport(server=server)
    try:
        handle = KernelHandle(transport).start()
        runner, worker = handle.launched.pid, handle.pid
        locator = transport.kept_locator(handle.launched)
        kept.save(kept.KeptKernel(kernel_id=handle.kernel_id, transport="local", locator=locator, token=handle.token,
                                  nodeid="t.py::t", kept_at=time.time(), detached_at=time.time(), ttl_s=60.0,
                                  host_pid=os.getpid(), worker_pid=worker))
        assert handle.keep(60.0).step == "kept"
        if killed:
            fds = [os.pidfd_open(pid) for pid in (runner, worker)]  # these processes, whatever their pids name later
            try:
                for fd in fds:
                    try:
                        signal.pidfd_send_signal(fd, signal.SIGKILL)
                    except ProcessLookupError:  # the worker ended by itself once its runner was killed (under load)
                        pass
            finally:
                for fd in fds:
                    os.close(fd)
            wait_until(lambda: gone(runner) and gone(worker), 5.0, what="the kept kernel's processes to go")
        lines: list[str] = []

        assert sweep_kept(lines.append, kernel_ids=[handle.kernel_id]) == 1, lines

        assert kept.load_all() == []
        wait_until(lambda: not os.path.exists(locator["kernel_dir"]), 5.0, what="its kernel dir to go")
        assert gone(runner) and gone(worker)
    finally:
        transport.close()
