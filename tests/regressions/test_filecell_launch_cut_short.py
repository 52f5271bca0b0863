"""Found by a backend-contributor helper (2026-12-04): SIGTERM (or Ctrl-C) during a filecell
kernel's start left its runner and kernel dir behind, parent pid 1, for up to its 1800 s idle
timer: in 2 of 4 runs with the helper's backend, 3 of 6 with ``LocalShellBackend``, 3 of 6 with
the plugin's filecell leg. The launch caught only ``Exception``, so the KeyboardInterrupt that
SIGTERM becomes skipped its cleanup after the far side had already started the runner (its pid
not yet known). Now a launch cut short ends every process with the kernel's marker and removes
its dir before the interruption goes on, and the local shell backend kills the launch command's
group so no later step of it runs. A second Ctrl-C during that cleanup cut it short, and the
runner ran on: the cleanup now runs to its end in a thread of its own.
"""

from __future__ import annotations

import re
import shlex
import signal

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import close_transport, make_transport

LAUNCH_MARK = "serve --listen"


class CutAfterTheLaunch:
    """Runs every command through ``inner``; the launch's call then raises KeyboardInterrupt, as
    a Ctrl-C (or pytest's SIGTERM) that lands the moment the far side started the runner."""

    def __init__(self, inner: object, press_again: bool = False) -> None:
        self.inner = inner
        self.launch: str | None = None
        self.press_again = press_again  # a second Ctrl-C as the cleanup's first command goes out

    def execute(self, cmd: str, timeout: float | None) -> tuple[int, str]:
        if self.launch is not None and self.press_again:
            self.press_again = False
            signal.raise_signal(signal.SIGINT)
        run = getattr(self.inner, "execute_detached", None) if LAUNCH_MARK in cmd else None
        result = (run or self.inner.execute)(cmd, timeout)  # type: ignore[attr-defined]
        if LAUNCH_MARK in cmd and self.launch is None:
            self.launch = cmd
            raise KeyboardInterrupt
        return result

    def __repr__(self) -> str:
        return f"CutAfterTheLaunch({self.inner!r})"


@pytest.mark.parametrize("presses", [1, 2], ids=["ctrl-c", "ctrl-c-again-during-the-cleanup"])
def test_a_launch_cut_short_leaves_no_runner_and_no_dir(execute_backend, presses):
    backend = CutAfterTheLaunch(execute_backend, press_again=presses == 2)
    transport = make_transport("filecell", backend=backend)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            start_kernel(transport)
        signal.signal(signal.SIGINT, previous)

        assert backend.launch is not None
        kernel_id = re.search(r"HERMES_KERNEL_ID=([0-9a-f]+)", backend.launch).group(1)
        kdir = re.search(rf"{re.escape(transport.root)}/k-[0-9a-f]+-[0-9a-f]+", backend.launch).group(0)
        assert transport.kernel_processes(kernel_id) == [], "the runner the launch started must be ended"
        code, out = execute_backend.execute(f"test -e {shlex.quote(kdir)} && echo there || echo gone", 15.0)
        assert (code, out.strip()) == (0, "gone"), f"the kernel dir {kdir} must be removed"
    finally:
        signal.signal(signal.SIGINT, previous)
        close_transport(transport)
