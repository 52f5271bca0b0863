"""Seen by a user-journey helper (2026-12-07): a filecell kernel whose host was SIGKILLed
(``hermes_host_sigkill``, the host harness) and whose runner outlived the death bound was killed
as a survivor (``kernel ... outlived its SIGKILLed host by more than 8 s; still alive: ...``),
and its kernel dir stayed under ``/tmp/hermes-filecell-<uid>/`` (``k-...`` with an empty log):
a SIGKILLed runner removes nothing, and the dir was made by the harness host, whose transport
was gone, so no leak check of the test process listed it. The harness now removes it once the
survivors are gone (``Transport.cleanup_kept`` with the kernel's locator).
"""

from __future__ import annotations

import os

from pytest_hermes_kernel.faults.harness import HarnessKernel
from pytest_hermes_kernel.kernel.options import KernelOptions


def test_the_survivors_kernel_dir_goes_with_them() -> None:
    kernel = HarnessKernel("filecell", KernelOptions(start_timeout=60))
    try:
        assert kernel.execute("1 + 1").value == "2"
        kdir = kernel.facts["locator"]["kernel_dir"]
        kernel.kill_host()
        assert kernel.survivors(), "the runner outlives its host (its 1800-s idle timer)"
        kernel.kill_survivors()
        assert not kernel.survivors()
        left = sorted(os.listdir(kdir)) if os.path.lexists(kdir) else []
        assert not os.path.lexists(kdir), f"{kdir} left behind: {left}"
    finally:
        kernel.shutdown()
