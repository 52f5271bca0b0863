"""Seen (a non-root breaker helper, 2026-12-05): ``hermes_oom`` on local made its memory cgroup at
the top of the hierarchy (``/sys/fs/cgroup/memory/hermes-kernel-...``, or ``/sys/fs/cgroup/...`` on
v2), which only root may write. An ordinary user whose pytest ran in a memory cgroup of its own (a
delegated one, as the skip's hint "run as root or delegate the memory controller" and the README's
fix said to set up) still skipped every ``hermes_oom`` test: "cannot create a v1 memory cgroup at
/sys/fs/cgroup/memory/hermes-kernel-...: Permission denied". The group is now made inside the
process's own cgroup when the top refuses it: there the kernel is OOM-killed under its limit, and
the death is classified ``oom_killed``."""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from pytest_hermes_kernel.faults.cgroup import V1_ROOT
from tests.nonroot import unprivileged_user
from tests.support import wait_until

CELL = """
import os
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.faults.cgroup import create_memory_cgroup

with open({procs!r}, "w") as fh:  # into the cgroup delegated to this user, as a CI runner's job would be
    fh.write(str(os.getpid()))
cg = create_memory_cgroup(64 * 2**20)
print("GROUP", cg.path)
try:
    with start_kernel("local", cgroup_procs=cg.procs_file, oom_counter_file=cg.oom_counter_file, timeout=60) as k:
        r = k.execute("hog = []\\nwhile True: hog.append(b'x' * 2**22)")
        print("RESULT", r.status, r.kernel.reason, r.kernel.oom_killed)
finally:
    cg.remove()
"""


def test_a_users_oom_kernel_runs_in_a_group_made_inside_its_delegated_cgroup() -> None:
    if not os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        pytest.skip("needs a cgroup v1 memory hierarchy to delegate a group in (v2 delegation is not exercised here)")
    user = unprivileged_user()
    if os.geteuid() != 0:
        pytest.skip("needs root to delegate a memory cgroup to the test's user")
    delegated = os.path.join(V1_ROOT, f"hermes-nonroot-{uuid.uuid4().hex[:8]}")
    os.mkdir(delegated)
    try:
        for entry in [delegated] + [os.path.join(delegated, n) for n in os.listdir(delegated)]:
            os.chown(entry, user.uid, user.gid)  # what delegating a cgroup to a user is (cgroups(7))
        ran = user.run(CELL.format(procs=os.path.join(delegated, "cgroup.procs")))
        assert ran.returncode == 0, ran.stdout + ran.stderr
        assert f"GROUP {delegated}/hermes-kernel-" in ran.stdout, ran.stdout
        assert "RESULT died oom_killed True" in ran.stdout, ran.stdout + ran.stderr
    finally:
        groups = [os.path.join(delegated, sub) for sub in os.listdir(delegated)
                  if os.path.isdir(os.path.join(delegated, sub))] + [delegated]
        # the run's kernel server and its spare end at the run's exit, just after it: a group with
        # a process in it cannot be removed (EBUSY, seen once under load)
        wait_until(lambda: not any(Path(g, "cgroup.procs").read_text().strip() for g in groups), 15.0,
                   what=f"the processes of the run to leave {delegated}")
        for group in groups:  # (cgroupfs removes a group by rmdir alone)
            os.rmdir(group)
