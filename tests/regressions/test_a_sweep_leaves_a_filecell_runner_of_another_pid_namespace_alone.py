"""Seen (a breaker helper on neighbours, 2026-12-06): a run in a pid namespace of its own (``unshare
--pid``, a CI job's container) that shares ``/tmp`` makes its filecell kernels under the same
``/tmp/hermes-filecell-<uid>`` as the runs beside it. ``hermes-kernel sweep`` (kind ``kernel-dirs``)
read each dir's ``runner.pid`` as a pid of its own namespace: where no process of that pid ran
here, it said ``would remove filecell kernel dir ... (its runner N is gone)`` of a live kernel, and
without ``--dry-run`` removed it (that kernel's next cell: ``status='died'``). The runner now
writes its pid namespace beside its pid, and the sweep leaves another namespace's runners alone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS

INNER = """
import json, os, pathlib, time

OUT = pathlib.Path(os.environ["KB_OUT"])


def test_a_filecell_kernel_held_while_a_neighbour_sweeps(hermes_kernel):
    assert hermes_kernel.execute("x = 41").status == "ok"
    (OUT / "up.json").write_text(json.dumps({"dir": hermes_kernel.launched.kernel_dir, "pid": os.getpid()}))
    deadline = time.monotonic() + 120
    while not (OUT / "go").exists():
        assert time.monotonic() < deadline, "the outer test never said go"
        time.sleep(0.05)
    assert hermes_kernel.execute("x + 1").value == "42"
"""


def _free_pids(count: int) -> int | None:
    """The first of ``count`` pids in a row that no process of this namespace has now."""
    used = {int(name) for name in os.listdir("/proc") if name.isdigit()}
    run = 0
    for pid in range(1000, 32000):
        run = 0 if pid in used else run + 1
        if run == count:
            return pid - count + 1
    return None


def test_sweep_dry_run_does_not_name_a_live_filecell_kernel_of_another_pid_namespace(tmp_path: Path) -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare, to start a run in a pid namespace of its own")
    first = _free_pids(2000)
    if first is None:
        pytest.skip("no 2000 free pids in a row here to give the namespace")
    (tmp_path / "test_inner.py").write_text(INNER)
    out = tmp_path / "out"
    out.mkdir()
    inner = " ".join([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-p", "no:xdist",
                      "-q", "--hermes-transport=filecell", "--hermes-require-transports", "--hermes-leak-check=error"])
    # its pids start where no process of this namespace is: the runner's pid names nothing here
    script = f"echo {first + 500} > /proc/sys/kernel/ns_last_pid && exec {inner}"
    proc = subprocess.Popen([unshare, "--pid", "--fork", "--mount-proc", "sh", "-c", script], cwd=tmp_path,
                            env=dict(os.environ, KB_OUT=str(out)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT_S
        while not (out / "up.json").exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the inner run never held its kernel:\n{proc.communicate()[0][-3000:]}")
            time.sleep(0.05)
        up = json.loads((out / "up.json").read_text())
        runner = int((Path(up["dir"]) / "runner.pid").read_text().split()[0])
        assert up["pid"] == 1 and not os.path.exists(f"/proc/{runner}")  # its runner's pid is none here
        swept = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", "--dry-run", "kernel-dirs"],
                               capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
        assert swept.returncode == 0, swept.stderr
        assert up["dir"] not in swept.stdout, swept.stdout
        (out / "go").write_text("")
        output = proc.communicate(timeout=RUN_TIMEOUT_S)[0]
    finally:
        (out / "go").write_text("")
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "1 passed" in output, output[-3000:]
    assert not os.path.exists(up["dir"])
