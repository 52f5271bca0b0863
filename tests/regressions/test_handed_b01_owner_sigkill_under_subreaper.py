"""Handed case B01: the kernel outlives its owner when the owner is SIGKILLed and the orphan is
adopted by a subreaper (a parent watch that tests ``getppid() == 1`` never fires).

The owner here marks itself a subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``) before it creates the
kernel, so an orphaned runner would be re-parented to... nobody useful: the local transport's
parent-death lease is the channel's EOF, which does not depend on who adopts the orphan.
"""

from __future__ import annotations

import json
import os
import signal
import sys

import pytest

from tests.support import gone, group_members, kill_quietly, pids_with_kernel_id, python_host, wait_until

OWNER = """
import ctypes, json, os, time
from pytest_hermes_kernel import KernelKey, KernelRegistry
libc = ctypes.CDLL(None, use_errno=True)
PR_SET_CHILD_SUBREAPER = 36
if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
    raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")
reg = KernelRegistry(background_reaper=False)
key = KernelKey(owner="b01")
r = reg.execute(key, "import os; x = 1; os.getpid()")
snap = reg.snapshot()[0]
print(json.dumps({"worker": int(r.value), "pgid": os.getpgid(int(r.value)), "runner": snap.runner_pid,
                  "kernel_id": snap.kernel_id}), flush=True)
time.sleep(600)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_CHILD_SUBREAPER is Linux-only")
def test_kernel_gone_within_5s_after_subreaper_owner_is_sigkilled():
    owner = python_host(OWNER)
    facts: dict = {}
    try:
        facts = json.loads(owner.stdout.readline() or "{}")
        assert facts, owner.stderr.read()
        assert facts["worker"] != facts["runner"] and facts["pgid"] == facts["worker"]
        assert pids_with_kernel_id(facts["kernel_id"]), "the kernel must be running before the fault"

        os.kill(owner.pid, signal.SIGKILL)
        owner.wait(5)

        wait_until(lambda: gone(facts["worker"]) and gone(facts["runner"]), 5.0,
                   what="the kernel's worker and runner to end after the owner was SIGKILLed")
        wait_until(lambda: not group_members(facts["pgid"]), 5.0, what="the kernel's process group to empty")
        wait_until(lambda: not pids_with_kernel_id(facts["kernel_id"]), 5.0,
                   what="no process with this HERMES_KERNEL_ID to remain")
    finally:
        kill_quietly([facts.get("worker"), facts.get("runner"), owner.pid])
        owner.stdout.close()
        owner.stderr.close()
