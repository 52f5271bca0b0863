"""Seen (a breaker helper, 2026-12-06): a ``hermes_oom`` test on local whose cell started a
``setsid`` process (a daemon: it leaves the worker's session, so the kernel's shutdown does not
end it) left its memory cgroup on the machine, ``/sys/fs/cgroup/memory/hermes-kernel-...``, one
more after every such run. The cleanup SIGKILLed what was in the group and removed it at once,
while the killed process was still exiting (``EBUSY``); the removal is now tried again until the
group is empty.
"""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.faults.cgroup import create_memory_cgroup

SUITE = """
import pytest

@pytest.mark.hermes_oom(limit_bytes=128 * 2**20)
def test_leaves_a_daemon(hermes_kernel):
    with open("cgroup.txt", "w") as fh:
        fh.write(open(f"/proc/{hermes_kernel.pid}/cgroup").read())
    r = hermes_kernel.execute("import subprocess; subprocess.Popen(['setsid', 'sleep', '300']).pid")
    assert r.status == "ok", r.summary()
"""


def _memory_cgroup_of(text: str) -> str:
    return next(line.split(":", 2)[2] for line in text.splitlines() if "memory" in line.split(":")[1].split(","))


def test_the_memory_cgroup_is_gone_after_the_test(pytester: pytest.Pytester) -> None:
    try:
        create_memory_cgroup(64 * 2**20).remove()
    except TransportUnavailableError as exc:
        pytest.skip(f"no memory cgroup here: {exc}")
    pytester.makepyfile(test_suite=SUITE)

    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hermes-transport=local", timeout=120)

    result.assert_outcomes(passed=1)
    group = "/sys/fs/cgroup/memory" + _memory_cgroup_of((pytester.path / "cgroup.txt").read_text())
    assert "hermes-kernel-" in group, group
    assert not os.path.exists(group), f"the test's memory cgroup was left on the machine: {group}"
