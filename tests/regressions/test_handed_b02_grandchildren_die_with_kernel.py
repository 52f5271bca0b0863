"""Handed case B02: subprocesses and pool workers started by a cell survive restart, shutdown or
kernel death.

Policy (local): everything a cell starts in the worker's process group or the runner's session
dies with the worker (restart, kernel death) or the kernel (shutdown). A process that leaves with
``start_new_session=True`` has opted out and is not reaped.
"""

from __future__ import annotations

import ast
import os
import signal

import pytest

from tests.support import all_gone, gone, kill_quietly, wait_until

START_CHILDREN = [
    "import subprocess\ns = subprocess.Popen(['sleep', '900'])\ns.pid",
    "from concurrent.futures import ProcessPoolExecutor\npool = ProcessPoolExecutor(2)\n"
    "sorted(pool.map(abs, [-3, -4]))",
    "[p.pid for p in pool._processes.values()]",
]


def _start_children(k) -> list[int]:
    sleep = k.execute(START_CHILDREN[0])
    pool = k.execute(START_CHILDREN[1])
    assert pool.value == "[3, 4]", pool.summary()
    workers = eval(k.execute(START_CHILDREN[2]).value)  # noqa: S307 - a list of ints from our cell
    pids = [int(sleep.value), *workers]
    assert len(pids) == 3 and not any(gone(p) for p in pids)
    return pids


def test_restart_kills_subprocess_and_pool_workers(make_kernel):
    k = make_kernel()
    pids = _start_children(k)
    try:
        k.restart()
        wait_until(lambda: all_gone(pids), 5.0, what="the cell's subprocess and pool workers to die")
        r = k.execute("pool")
        assert r.ename == "NameError" and r.kernel.state_lost and r.kernel.reason == "reset"
    finally:
        kill_quietly(pids)


def test_shutdown_kills_subprocess_and_pool_workers(make_kernel):
    k = make_kernel()
    pids = _start_children(k)
    try:
        k.close()
        wait_until(lambda: all_gone(pids), 5.0, what="the cell's subprocess and pool workers to die")
    finally:
        kill_quietly(pids)


def test_kernel_sigkill_kills_subprocess_and_pool_workers(make_kernel):
    k = make_kernel()
    pids = _start_children(k)
    try:
        os.kill(k.pid, signal.SIGKILL)
        wait_until(lambda: all_gone(pids + [k.pid]), 5.0,
                   what="the death handler to clean up the worker's process group")
        r = k.execute("pool")
        assert r.ename == "NameError" and r.kernel.state_lost and r.kernel.reason == "died"
        assert r.kernel.signal == signal.SIGKILL
    finally:
        kill_quietly(pids)


@pytest.mark.parametrize("how", ["restart", "sigkill"])
def test_process_in_its_own_group_dies_with_the_worker(make_kernel, how):
    """A cell's child that moved to its own process group (same session) is still the cell's."""
    k = make_kernel()
    r = k.execute("import os, subprocess\ns = subprocess.Popen(['sleep', '900'], preexec_fn=os.setpgrp)\n"
                  "os.getpgid(s.pid) == s.pid, s.pid")  # (Popen's process_group=0 is 3.11+: the kernel may be 3.10)
    regrouped, pid = ast.literal_eval(r.value or "(None, None)")
    assert regrouped, r.summary()
    try:
        if how == "restart":
            k.restart()
        else:
            os.kill(k.pid, signal.SIGKILL)
        wait_until(lambda: gone(pid), 5.0, what="the regrouped subprocess to die with its worker")
    finally:
        kill_quietly([pid])


def test_new_session_escapes_by_policy(make_kernel):
    """Documented policy: ``start_new_session=True`` opts a process out of kernel cleanup (local)."""
    k = make_kernel()
    pid = int(k.execute("import subprocess\ns = subprocess.Popen(['sleep', '900'], start_new_session=True)\n"
                        "s.pid").value)
    try:
        k.close()
        assert not gone(pid)
    finally:
        kill_quietly([pid])
        wait_until(lambda: gone(pid), 5.0, what="the escaped sleep to be killed by the test")
