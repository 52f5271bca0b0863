"""A kernel server answered the host as soon as it had forked a kernel, before the child had run at
all, let alone written its kernel id over the placeholder in its environment (what the host's
scans find a kernel's processes by). A server gone right after that fork (its ssh stream closed)
left the host a kill-by-kernel-id that found nothing: the forked runner and worker lived on, on
their orphan timer (a clean-clone run, 2026-12-06: `test_a_server_gone_right_after_it_forked_
leaves_only_the_spawned_kernel[ssh]`, leaked kernel processes). The server now waits until the
child says it is marked (or is gone: its end of the pipe closes)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from pytest_hermes_kernel.kernel.runner import server

SCRIPT = r"""
import os, sys, time
from pytest_hermes_kernel.kernel.runner import server

srv = server.ForkingServer({"idle_timeout": None})
mark, how = sys.argv[1], sys.argv[2]

def child():
    if how == "dies":
        os._exit(3)  # gone before it could mark itself
    time.sleep(0.3)  # a kernel the scheduler runs late
    open(mark, "w").close()  # stands for its kernel id written into /proc/<pid>/environ
    for fd in server._stamped_w:  # as enter_kernel does once it is marked
        os.write(fd, b"1")
    os._exit(0)

began = time.monotonic()
pid = srv.fork(child)
print("marked" if os.path.exists(mark) else "unmarked", round(time.monotonic() - began, 2), flush=True)
os.waitpid(pid, 0)
"""


def _fork(tmp_path: Path, how: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(server.__file__).parents[3]),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "marked"), how], capture_output=True,
                          text=True, env=env, timeout=30, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_the_server_answers_once_its_kernel_is_marked(tmp_path) -> None:
    assert _fork(tmp_path, "late")[0] == "marked"


def test_a_kernel_gone_before_it_was_marked_does_not_hold_the_server(tmp_path) -> None:
    said, waited_s = _fork(tmp_path, "dies")
    assert said == "unmarked"
    assert float(waited_s) < server.STAMP_WAIT_S, waited_s  # its pipe's end closed: no wait for the bound
