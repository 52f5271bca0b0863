"""Seen (a non-root breaker helper, 2026-12-05): a kernel started with ``cgroup_procs=`` naming a
cgroup its worker could not join (a path with a typo, or a root-owned cgroup an ordinary user may
not write) started, and its cells ran outside the cgroup, without its memory limit, without a
word: the worker's failed write to ``cgroup.procs`` was ignored (``/proc/self/cgroup`` showed the
host's group; on every transport). A test of the limit passed unchecked. Now the runner checks,
before its worker starts, that it may write the file: the start fails naming it and why."""

from __future__ import annotations

import os

import pytest

from pytest_hermes_kernel import KernelStartError, start_kernel
from pytest_hermes_kernel.transports import make_transport
from tests.nonroot import unprivileged_user

MISSING = "/sys/fs/cgroup/memory/hermes-no-such-group/cgroup.procs"


def _start_error(request: pytest.FixtureRequest, where: str, cgroup_procs: str) -> str:
    """The start error of a kernel on ``where`` (``local-spawn``: the spawn path) with ``cgroup_procs``."""
    if where in ("docker", "ssh"):
        request.getfixturevalue("docker_ready")
    name, _, spawn = where.partition("-")
    transport = make_transport(name, **({"server": False} if spawn else {}))
    try:
        with pytest.raises(KernelStartError) as exc:
            with start_kernel(transport, cgroup_procs=cgroup_procs, start_timeout=30) as k:
                groups = k.execute("open('/proc/self/cgroup').read()").value
                pytest.fail(f"started; its worker is in {groups}")
    finally:
        transport.close()
    return str(exc.value)


@pytest.mark.parametrize("where", ["local", "local-spawn", "filecell", "docker", "ssh"])
def test_a_cgroup_that_does_not_exist_fails_the_start_naming_it(request, where):
    text = _start_error(request, where, MISSING)
    assert f"the worker cannot join the cgroup cgroup_procs={MISSING!r}: No such file or directory" in text
    assert "needs sh, python3" not in text, "a hint blaming the backend's tools (filecell)"


#: A file any user may open for writing whose every write fails (``ENOSPC``): a join refused at the
#: write, not the open (as cgroup v2 refuses a move across a subtree the user was not delegated).
REFUSES_THE_WRITE = "/dev/full"


@pytest.mark.parametrize("where", ["local", "local-spawn", "filecell", "docker", "ssh"])
def test_a_cgroup_that_refuses_the_join_itself_fails_the_start(request, where):
    """Before: the runner's check only opened the file, and the worker's refused write was ignored:
    the kernel started and its cells ran outside the cgroup (``STARTED`` on every transport)."""
    text = _start_error(request, where, REFUSES_THE_WRITE)
    assert f"the worker cannot join the cgroup cgroup_procs={REFUSES_THE_WRITE!r}: No space left on device" in text, text


def _roots_cgroup_procs() -> str:
    for path in ("/sys/fs/cgroup/memory/cgroup.procs", "/sys/fs/cgroup/cgroup.procs"):
        if os.path.exists(path) and os.stat(path).st_uid == 0:
            return path
    pytest.skip("no root-owned memory cgroup.procs at /sys/fs/cgroup (v1 memory/ or v2)")


CELL = """
from pytest_hermes_kernel import KernelStartError, start_kernel

try:
    with start_kernel("local", cgroup_procs={path!r}, start_timeout=30) as k:
        print("STARTED", k.execute("open('/proc/self/cgroup').read()").value)
except KernelStartError as exc:
    print("REFUSED", exc)
"""


def test_a_non_root_users_kernel_in_a_root_owned_cgroup_fails_its_start() -> None:
    path = _roots_cgroup_procs()
    user = unprivileged_user()
    ran = user.run(CELL.format(path=path))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "REFUSED the local kernel runner died during start" in ran.stdout, ran.stdout + ran.stderr
    assert f"cannot join the cgroup cgroup_procs={path!r}: Permission denied" in ran.stdout, ran.stdout
