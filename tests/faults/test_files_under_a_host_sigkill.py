"""A ``hermes_host_sigkill`` kernel is used as any other: its host harness forwards file transfers
and the handle's members a test reads (each raised ``AttributeError: 'HarnessKernel' object has
no attribute ...``), and once the host is killed a transfer says so (``HostGoneError``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pytest_hermes_kernel.contract._probes import run_in_thread
from pytest_hermes_kernel.errors import HostGoneError

#: The docker and ssh kernels' orphan timer: the plugin waits for their end after the host's death
#: (the marker's own is 5 s; the marker's defaults are test_fault_markers.py's to check).
ORPHAN_TIMEOUT_S = 1.0


@pytest.mark.hermes_kernel(orphan_timeout=ORPHAN_TIMEOUT_S)
@pytest.mark.hermes_host_sigkill(after_cell=1)
def test_files_move_in_and_out_until_the_host_is_killed(hermes_kernel, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "data.txt").write_text("hello")
    monkeypatch.chdir(tmp_path)  # a relative local path is the test's, not the harness host's
    assert hermes_kernel.upload("data.txt", "in.txt").files == 1
    assert hermes_kernel.execute("open('in.txt').read()").value == "'hello'"
    assert hermes_kernel.download("in.txt", "back.txt").bytes == 5
    assert (tmp_path / "back.txt").read_text() == "hello"
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("1")
    with pytest.raises(HostGoneError):
        hermes_kernel.upload("data.txt", "again.txt")


@pytest.mark.hermes_kernel(report_running=True, orphan_timeout=ORPHAN_TIMEOUT_S)
@pytest.mark.hermes_host_sigkill(after_cell=2)
def test_the_handles_members_a_test_reads_work_until_the_host_is_killed(hermes_kernel) -> None:
    """``worker_pid``, ``restart_count``, ``start()`` and ``cancel()`` are the handle's too (docs/api.md):
    each raised ``AttributeError`` naming ``HarnessKernel``."""
    assert hermes_kernel.start() is not None and hermes_kernel.restart_count == hermes_kernel.generation == 0
    assert hermes_kernel.worker_pid == hermes_kernel.pid and hermes_kernel.execute("1").status == "ok"
    started = threading.Event()
    hermes_kernel.add_listener(lambda event, _kernel, _payload: event == "running" and started.set())
    cell = run_in_thread(hermes_kernel, "import time; time.sleep(60)")
    assert started.wait(30), "cell 2 never started"
    hermes_kernel.cancel()
    r = cell.result(timeout=30)
    assert (r.status, r.watchdog) == ("timeout", "interrupted"), r.summary()
    with pytest.raises(HostGoneError):
        hermes_kernel.execute("1")
