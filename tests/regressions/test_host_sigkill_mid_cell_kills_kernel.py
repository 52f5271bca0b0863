"""Seed bug: a kernel outlived its host when the host was SIGKILLed in the middle of a cell.

The local channel is the parent-death lease: its EOF makes the supervisor kill the worker's
group and exit, even while a cell runs.

Without it the kernel lives on until its runner's orphan timer (``orphan_timeout``, 60 s by
default); the waits below give the EOF path 20 s, a third of that, where the test asserted 2 s
(a loaded 2-core machine's scheduling, not the kit, is what such a bound measures).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from tests.support import gone, kill_quietly, python_host, wait_until

HOST = """
import json, sys
from pytest_hermes_kernel import start_kernel
k = start_kernel("local")
print(json.dumps({{"worker": k.pid, "runner": k.runner_pid, "kernel_id": k.kernel_id,
                  "kernel_dir": k.launched.kernel_dir}}), flush=True)
k.execute("open({marker!r}, 'w').close()\\nimport time\\ntime.sleep(600)")
"""


def test_kernel_dies_at_once_when_its_host_is_sigkilled_mid_cell(tmp_path: Path):
    marker = tmp_path / "cell-started"
    host = python_host(HOST.format(marker=str(marker)))
    pids: dict = {}
    try:
        pids = json.loads(host.stdout.readline() or "{}")
        assert pids, host.stderr.read()
        wait_until(marker.exists, 10.0, what="the long cell to start in the host's kernel")

        os.kill(host.pid, signal.SIGKILL)
        host.wait(5)

        wait_until(lambda: gone(pids["worker"]) and gone(pids["runner"]), 20.0,
                   what="the kernel's worker and runner to end after the host was SIGKILLed")
        wait_until(lambda: not os.path.exists(pids["kernel_dir"]), 20.0,
                   what="the dead host's kernel dir to be removed by its runner")
    finally:
        kill_quietly([pids.get("worker"), pids.get("runner"), host.pid])
        host.stdout.close()
        host.stderr.close()
