"""A kept ssh kernel gone for good (its runner killed by hand, or by a sweep) left its kernel dir
``~/.hermes-kernels/<id>`` on a ``target=`` host: ``hermes-kernel sweep --kept`` removed only its
record (the run's own sshd container goes as a whole, a target host does not). The transport
now removes it (``Transport.cleanup_kept``), ending first whatever still carries the kernel's id
(a kept kernel whose TTL ran out may still run). Tested on the run's sshd container, through
the transport the sweep would make."""

from __future__ import annotations

import shlex

import pytest

from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.transports import close_transport, make_transport
from tests.support import wait_until


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
@pytest.mark.parametrize("killed", [True, False], ids=["runner-killed", "runner-alive"])
def test_cleanup_kept_leaves_nothing_of_an_ssh_kernel(docker_ready, server: bool, killed: bool) -> None:
    transport = make_transport("ssh", server=server)
    kernel_id = ""
    try:
        handle = KernelHandle(transport).start()
        kernel_id = handle.kernel_id
        locator = transport.kept_locator(handle.launched)  # (writes a copy of the run's key beside the records)
        kdir = locator["kernel_dir"]
        assert handle.keep(60.0).step == "kept"
        conn = transport.connection()
        pids = [line.split(":", 1)[0] for line in transport.kernel_processes(kernel_id)]
        assert len(pids) >= 2, pids  # runner and worker
        if killed:
            conn.run(f"kill -9 {' '.join(pids)}", timeout=15.0)
            wait_until(lambda: not transport.kernel_processes(kernel_id), 10.0, what="the kept kernel's processes to go")

        transport.cleanup_kept(locator)

        assert transport.kernel_processes(kernel_id) == []
        _, out, _ = conn.run(f"test -e {shlex.quote(kdir)} && echo there || echo gone", timeout=15.0)
        assert out.strip() == b"gone", f"{kdir} is still on the host"
    finally:
        if kernel_id:
            kept.remove(kernel_id)  # the key copy the locator wrote (a fresh-install helper found 12 left behind)
        close_transport(transport)
