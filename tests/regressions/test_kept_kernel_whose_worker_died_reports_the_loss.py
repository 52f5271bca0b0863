"""Found by a breaker helper (2026-12-04): a kept kernel whose worker had ended (a cell called
``os._exit``, between two attaches) was silently given a fresh worker at the next attach: its
first cell ran there with ``state_lost=False`` (a bare ``NameError``), and with
``auto_restart=False`` (the CLI's) nothing was refused. The runner's hello now says how its last
worker ended, and the attach records that as a loss the next cell reports (``KernelDiedError``
with ``auto_restart=False``).
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import KernelOptions
from pytest_hermes_kernel.errors import KernelDiedError
from pytest_hermes_kernel.kernel.handle import KernelHandle, attach_kept
from pytest_hermes_kernel.transports.local import LocalTransport


@pytest.mark.parametrize("auto_restart", [True, False])
def test_the_first_cell_after_attaching_to_a_kept_kernel_with_a_dead_worker_reports_the_loss(auto_restart):
    transport = LocalTransport()
    kernel = KernelHandle(transport).start()
    try:
        kernel.execute("x = 41")
        where = transport.locator(kernel.launched)
        kernel.keep(60.0)
        died = attach_kept(transport, where, kernel_id=kernel.kernel_id, token=kernel.token)
        assert died.execute("import os; os._exit(4)").status == "died"
        died.keep(60.0)

        again = attach_kept(transport, where, kernel_id=kernel.kernel_id, token=kernel.token,
                            options=KernelOptions(auto_restart=auto_restart))
        try:
            if not auto_restart:
                with pytest.raises(KernelDiedError) as raised:
                    again.execute("x")
                assert raised.value.info.note == "the kept kernel's worker had ended before this attach (exit code 4)"
                return
            r = again.execute("x")
            assert r.ename == "NameError" and r.kernel.state_lost, r
            assert (r.kernel.reason, r.kernel.exit_code) == ("died", 4), r.kernel
        finally:
            again.shutdown()
    finally:
        transport.close()
