"""Seen: ``start_kernel(FileCellTransport(backend), start_timeout=1)`` on a backend whose launch
took 3 s started after 3 s, and ``start_timeout=0.001`` started too: filecell's launch waited for
its own ``launch_timeout`` (60 s) whatever the kernel's ``start_timeout`` (docs/api.md: over it,
``KernelStartError``; docs/reference.md: a launch should not wait longer than ``spec.start_timeout``
for its far side). Now the launch's command is bounded by the smaller of the two."""

from __future__ import annotations

import time

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import FileCellTransport, LocalShellBackend


class SlowLaunch(LocalShellBackend):
    """A backend whose launch command (the one that makes the kernel dir) takes 6 s more."""

    def execute_detached(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        return super().execute_detached(f"sleep 6\n{cmd}" if cmd.startswith("umask 077") else cmd, timeout)


def test_a_slow_filecell_launch_ends_at_the_kernels_start_timeout() -> None:
    transport = FileCellTransport(SlowLaunch())
    try:
        started = time.monotonic()
        with pytest.raises(KernelStartError, match=r"did not say hello within 1 s \(start_timeout\)"):
            start_kernel(transport, start_timeout=1.0)
        # start_timeout is the contract: 1 s, and 4 s of a loaded machine's slack; the launch's own 6 s are not waited
        assert time.monotonic() - started < 1.0 + 4.0
        with start_kernel(transport, start_timeout=20.0) as kernel:  # a budget it fits in: it starts
            assert kernel.execute("1 + 1").value == "2"
    finally:
        transport.close()
