"""Seen (a breaker helper on neighbours, 2026-12-06): when an xdist worker crashes, its controller
kills every process of the machine whose kernel host (``HERMES_KERNEL_HOST_PID``) is the worker's
pid and that started after it (:func:`~pytest_hermes_kernel.plugin.crashes.reap_local`). A run in a
pid namespace of its own beside it (``unshare --pid``, a CI job's container; all of its processes
are in this machine's process table) names its host by that namespace's pid: where that number
was the crashed worker's, the controller killed the other run's live kernel. Such a process is
now left alone when its host, by its own namespace's pids, still runs."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import uuid

import psutil
import pytest

from pytest_hermes_kernel.plugin.crashes import reap_local
from pytest_hermes_kernel.procs import start_time
from tests.support import pids_with_kernel_id, wait_until

NEIGHBOUR = """
import os, subprocess, sys
assert os.getpid() == int(sys.argv[1]), (os.getpid(), sys.argv[1])  # its host: the crashed worker's pid, there
env = dict(os.environ, HERMES_KERNEL_HOST_PID=str(os.getpid()), HERMES_KERNEL_ID=sys.argv[2])
subprocess.Popen(["sleep", "300"], env=env).wait()
"""


def test_a_crashed_workers_reap_leaves_a_live_kernel_of_the_same_host_pid_in_another_namespace() -> None:
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or unshare is None:
        pytest.skip("needs root and unshare, to start a run in a pid namespace of its own")
    worker = subprocess.Popen(["sleep", "300"])  # the worker that crashes
    host_pid, since = worker.pid, start_time(worker.pid)
    worker.kill()
    worker.wait()
    kernel_id = f"neighbour-{uuid.uuid4().hex}"
    # the neighbour's host gets that pid in its namespace (`sh` is its pid 1 and forks python next)
    python = shlex.join([sys.executable, "-c", NEIGHBOUR, str(host_pid), kernel_id])
    script = f"echo {host_pid - 1} > /proc/sys/kernel/ns_last_pid && {python}; :"
    neighbour = subprocess.Popen([unshare, "--pid", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script])
    try:
        wait_until(lambda: pids_with_kernel_id(kernel_id), 10.0, what="the neighbour's kernel")
        (kernel,) = pids_with_kernel_id(kernel_id)
        assert psutil.Process(kernel).environ()["HERMES_KERNEL_HOST_PID"] == str(host_pid)

        assert reap_local(host_pid, since=since) == 0
        assert psutil.Process(kernel).status() != psutil.STATUS_ZOMBIE  # the other run's kernel runs on
    finally:
        neighbour.kill()  # its namespace's pid 1 (unshare's child, --kill-child) goes with it, and all in there
        neighbour.wait(10)
        wait_until(lambda: not pids_with_kernel_id(kernel_id), 10.0, what="the neighbour's namespace to end")
