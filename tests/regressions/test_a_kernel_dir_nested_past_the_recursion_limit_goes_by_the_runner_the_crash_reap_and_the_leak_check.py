"""A kernel dir holding a tree nested past Python's recursion limit is removed by every path that
removes a kernel dir, not only by a shutdown's.

``shutil.rmtree`` before Python 3.12 recurses once per level, so a cell that made 1,500 nested
dirs in its working dir made it raise ``RecursionError`` (``ignore_errors=True`` does not catch
it). The shutdown paths were fixed (``kernel/runner/trees.py``), three others still raised it:

- the reap of a crashed xdist worker's local kernels (a filecell runner's dir): the controller's
  ``pytest_testnodedown`` raised it, with the dir left;
- the leak check's removal of a leaked kernel dir;
- a spawned runner's own removal of its dir once its host was gone (SIGKILLed): the runner died
  of it with its dir left behind.
"""

from __future__ import annotations

import os
import random
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from pytest_hermes_kernel.leaks import probes as leak_probes
from pytest_hermes_kernel.plugin.crashes import reap_local
from tests.support import NEST_DIRS_CELL, environ_of, nest_dirs, tmp_path_for_deep_trees, wait_until  # noqa: F401 - tmp_path


@pytest.fixture
def runner_in(tmp_path) -> Iterator[tuple[int, str, subprocess.Popen[bytes]]]:
    """``(host pid, kernel dir, process)``: a runner-like ``sleep`` of a host pid no process has,
    whose working dir is its kernel dir (``runner.pid`` names it) holding a tree 1,500 dirs deep."""
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as fh:
        host = int(fh.read()) + random.randrange(1000, 1_000_000)
    kdir = tmp_path / "k-deep"
    kdir.mkdir()
    nest_dirs(str(kdir))
    env = {**os.environ, "HERMES_KERNEL_ID": uuid.uuid4().hex, "HERMES_KERNEL_HOST_PID": str(host)}
    proc = subprocess.Popen(["sleep", "300"], env=env, cwd=kdir, start_new_session=True)
    (kdir / "runner.pid").write_text(f"{proc.pid}\n")
    wait_until(lambda: "HERMES_KERNEL_HOST_PID" in environ_of(proc.pid), 5.0, what="the process to have exec'd with its marker")
    try:
        yield host, str(kdir), proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(5)


def test_the_reap_of_a_crashed_worker_removes_its_runners_deep_kernel_dir(runner_in) -> None:
    host, kdir, proc = runner_in

    assert reap_local(host) == 1  # it raised RecursionError
    assert proc.wait(5) == -9
    assert not os.path.lexists(kdir)


def test_the_leak_checks_removal_of_a_leaked_kernel_dir_removes_a_deep_one(tmp_path, monkeypatch) -> None:
    leaked = tmp_path / f"{leak_probes._own_dir_prefix()}deep"
    leaked.mkdir()
    nest_dirs(str(leaked))
    monkeypatch.setattr(leak_probes, "_kernel_dir_roots", lambda: [str(tmp_path)])

    leak_probes._remove_kernel_dir(f"dir:{leaked.name}")  # it raised RecursionError

    assert not os.path.lexists(leaked)


HOST = """
import os, signal
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport
kernel = start_kernel(make_transport("local", server=False))
root = kernel.execute({nest!r}).value.strip("'")
print(kernel.runner_pid, root, flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_runner_whose_host_was_killed_removes_its_deep_kernel_dir() -> None:
    """A spawned runner removes its own kernel dir when its host goes (nobody else is left to);
    its ``shutil.rmtree`` raised ``RecursionError`` and the runner died with the dir left."""
    from pytest_hermes_kernel.procs import read_stat
    from tests.support import python_host

    host = python_host(HOST.format(nest=NEST_DIRS_CELL))
    out, err = host.communicate(timeout=120)
    assert host.returncode == -9 and out.strip(), (host.returncode, out, err[-2000:])
    pid, kdir = out.split()
    try:
        wait_until(lambda: (read_stat(int(pid)) or [b"Z"])[0] == b"Z", 30.0, what="the runner to end after its host")
        assert not os.path.lexists(kdir), "the runner left its kernel dir"
    finally:
        subprocess.run(["rm", "-rf", "--", kdir], check=False)
