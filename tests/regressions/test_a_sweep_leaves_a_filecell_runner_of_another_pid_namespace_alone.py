"""Seen (a breaker helper on neighbours, 2026-12-06): a run in a pid namespace of its own (``unshare
--pid``, a CI job's container) that shares ``/tmp`` makes its filecell kernels under the same
``/tmp/hermes-filecell-<uid>`` as the runs beside it. ``hermes-kernel sweep`` (kind ``kernel-dirs``)
read each dir's ``runner.pid`` as a pid of its own namespace: where no process of that pid ran
here, it said ``would remove filecell kernel dir ... (its runner N is gone)`` of a live kernel, and
without ``--dry-run`` removed it (that kernel's next cell: ``status='died'``). The runner now
writes its pid namespace beside its pid, and the sweep leaves another live namespace's runners
alone (once that namespace has ended, its runners are gone with it and their dirs go)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests import namespaced
from tests.support import RUN_TIMEOUT_S, wait_until

INNER = namespaced.WAIT_FOR + """

def test_a_filecell_kernel_held_while_a_neighbour_sweeps(hermes_kernel):
    assert hermes_kernel.execute("x = 41").status == "ok"
    (OUT / "up.json").write_text(json.dumps({"dir": hermes_kernel.launched.kernel_dir, "pid": os.getpid()}))
    wait_for("go")
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


def _start_run(tmp_path: Path) -> tuple[subprocess.Popen[str], Path]:
    """A filecell run of :data:`INNER` as a pid namespace's pid 1, its pids starting where no process
    of this namespace is (the runner's pid names nothing here), and its out dir."""
    out = namespaced.prepare(tmp_path, INNER)
    first = _free_pids(2000)
    if first is None:
        pytest.skip("no 2000 free pids in a row here to give the namespace")
    command = namespaced.pytest_command("--hermes-transport=filecell", "--hermes-require-transports")
    proc = namespaced.start(tmp_path, command, before=f"echo {first + 500} > /proc/sys/kernel/ns_last_pid",
                            KB_OUT=str(out))
    return proc, out


def test_sweep_dry_run_does_not_name_a_live_filecell_kernel_of_another_pid_namespace(tmp_path: Path) -> None:
    proc, out = _start_run(tmp_path)
    try:
        up = namespaced.wait_for(proc, out / "up.json")
        runner = int((Path(up["dir"]) / "runner.pid").read_text().split()[0])
        assert up["pid"] == 1 and not os.path.exists(f"/proc/{runner}")  # its runner's pid is none here
        swept = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", "--dry-run", "kernel-dirs"],
                               capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
        assert swept.returncode == 0, swept.stderr
        assert up["dir"] not in swept.stdout, swept.stdout
        output = namespaced.finish(proc, out / "go")
    finally:
        namespaced.stop([proc], out / "go")
    assert proc.returncode == 0 and "1 passed" in output, output[-3000:]
    assert not os.path.exists(up["dir"])


def test_sweep_names_the_filecell_dir_of_a_killed_run_of_another_pid_namespace(tmp_path: Path) -> None:
    """Once that namespace has ended (the run SIGKILLed), its runners are gone: their dirs go."""
    proc, out = _start_run(tmp_path)
    try:
        up = namespaced.wait_for(proc, out / "up.json")
    finally:
        proc.kill()  # SIGKILL: its namespace ends with unshare's child, the filecell runner too
        proc.communicate()
    try:
        runner = int((Path(up["dir"]) / "runner.pid").read_text().split()[0])
        wait_until(lambda: not os.path.exists(f"/proc/{runner}"), 10.0, what="the runner's pid to name nothing")
        swept = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", "--dry-run", "kernel-dirs"],
                               capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
        assert f"would remove filecell kernel dir {up['dir']} (its runner {runner} is gone)" in swept.stdout, swept.stdout
    finally:
        shutil.rmtree(up["dir"], ignore_errors=True)  # this test's run's: the dry run removed nothing


def test_the_dir_goes_once_the_namespace_ended_though_its_runners_pid_names_a_live_process_here() -> None:
    """The case above without its free pids: a namespace's runner has a small pid (its pytest is
    pid 1 there), which a live process of this namespace has too (a kernel thread, a daemon). Once
    the runner's namespace had ended, the sweep judged that pid here, found it alive, and kept the
    dir for good (no age ends a filecell dir). A runner of an ended namespace is gone, whatever
    its pid names here."""
    ended = namespaced.ended_namespace()
    from pytest_hermes_kernel.transports.filecell.transport import DEFAULT_ROOT

    os.makedirs(DEFAULT_ROOT, mode=0o700, exist_ok=True)
    kdir = tempfile.mkdtemp(prefix="k-kfended-", dir=DEFAULT_ROOT)
    try:
        (Path(kdir) / "runner.pid").write_text(f"{os.getpid()} {ended}\n")  # this pid lives here
        swept = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "sweep", "--dry-run", "kernel-dirs"],
                               capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False)
        assert f"would remove filecell kernel dir {kdir} (its runner {os.getpid()} is gone)" in swept.stdout, swept.stdout
    finally:
        shutil.rmtree(kdir, ignore_errors=True)
