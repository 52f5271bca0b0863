"""Seen by a user-journey helper (2026-12-07): filecell runners that ended by their orphan timer
(their host gone: a ``hermes_host_sigkill`` test, a killed pytest; filecell's timer is an idle
timer, so any kernel left alone) left their kernel dirs under ``/tmp/hermes-filecell-<uid>/``
(``k-...`` with the runner file, token, socket and pid file), the runner log saying
``ModuleNotFoundError: No module named 'hermes_kernel_runner.trees'``: the runner's shutdown
removes its own dir with that module, and filecell's compact runner file left it out. A runner
that ends by itself now takes its dir with it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.kernel.options import KernelOptions
from pytest_hermes_kernel.transports import make_transport


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short path: a filecell root must fit unix socket paths (an xdist worker's tmp_path does not)."""
    path = Path(tempfile.mkdtemp(prefix="fcroot-"))
    yield path
    shutil.rmtree(path)


def test_the_kernel_dir_goes_with_the_runner(short_tmp: Path) -> None:
    transport = make_transport("filecell", root=str(short_tmp / "fc"), orphan_timeout=1.0, poll_window_s=1.0, hold_s=0.0)
    try:
        kernel = KernelHandle(transport, KernelOptions(start_timeout=60)).start()
        try:
            assert kernel.execute("1 + 1").value == "2"
            kdir = kernel.launched.kernel_dir
            deadline = time.monotonic() + 30.0  # idle 1 s: the runner ends by its orphan timer
            while transport.alive(kernel.launched) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not transport.alive(kernel.launched), "the runner did not end by its 1-s orphan timer"
            while os.path.lexists(kdir) and time.monotonic() < deadline:
                time.sleep(0.05)
            left = sorted(os.listdir(kdir)) if os.path.lexists(kdir) else []
            assert not os.path.lexists(kdir), f"{kdir} left behind: {left}"
        finally:
            kernel.shutdown()
    finally:
        transport.close()
