"""Seen (a breaker helper running the kit in CI job containers, 2026-12-06): in a docker job
container, pytest run as root, every ``hermes_oom`` test on local and filecell skipped with
``cannot create a v1 memory cgroup at /sys/fs/cgroup/memory/hermes-kernel-...: [Errno 30]
Read-only file system ...; nor at /sys/fs/cgroup/memory/docker/ID/hermes-kernel-...: [Errno 2] No
such file or directory ... Hint: run as root, or run pytest in a memory cgroup of this user's own``:
it was root, and ``/sys/fs/cgroup/memory/docker/ID`` is the host's path of the container's cgroup,
which the container sees at ``/sys/fs/cgroup/memory`` itself. The own cgroup is now found where the
hierarchy's mount shows it (``/proc/self/mountinfo``), and a refusal that is the read-only mount
says so, with what helps: a privileged job container, or the docker leg.

The container's view is made on this host without an engine: a memory cgroup bind-mounted
read-only over ``/sys/fs/cgroup/memory`` in a mount namespace of its own, pytest moved into it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_hermes_kernel
from pytest_hermes_kernel.faults.cgroup import V1_ROOT, create_memory_cgroup

TEST = """
import pytest


@pytest.mark.hermes_oom(limit_bytes=64 * 2**20)
def test_oom(hermes_kernel):
    hermes_kernel.execute("hog = []\\nwhile True: hog.append(b'x' * 2**22)")
"""


def test_the_skip_names_the_read_only_cgroup_mount_and_no_path_the_container_lacks(tmp_path: Path) -> None:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) to make a container's view of its memory cgroup")
    if not os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        pytest.skip("needs a cgroup v1 memory hierarchy (this machine's)")
    (tmp_path / "test_oom.py").write_text(TEST)
    cg = create_memory_cgroup(512 * 2**20)  # the job container's own cgroup and limit
    env = {**os.environ, "CG": cg.path, "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1])}
    pytest_cmd = (f"{sys.executable} -m pytest -p no:cacheprovider -p no:xdist -p no:randomly -rs -q "
                  f"--hermes-transport=local,filecell test_oom.py")
    view = f'mount --bind "$CG" {V1_ROOT} && mount -o remount,bind,ro {V1_ROOT} && exec {pytest_cmd}'
    try:
        ran = subprocess.run(["sh", "-c", f"echo $$ > \"$CG/cgroup.procs\" && exec unshare --mount --fork sh -c '{view}'"],
                             env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    finally:
        cg.remove()
    skips = [line for line in ran.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skips) == 2 and "2 skipped" in ran.stdout, ran.stdout + ran.stderr
    for line in skips:
        assert "needs a memory cgroup: cannot create a v1 memory cgroup at /sys/fs/cgroup/memory/hermes-kernel-" in line
        assert "Read-only file system" in line and "No such file" not in line, line
        assert "mounted read-only here" in line and "run as root" not in line, line
        assert "privileged" in line and "--hermes-transport=docker" in line, line


V2_JOB = """
from pytest_hermes_kernel.faults.cgroup import create_memory_cgroup
try:
    create_memory_cgroup(64 * 2**20)
except Exception as exc:
    print("REFUSED", exc)
"""


def test_on_cgroup_v2_the_skip_names_the_read_only_mount_too(tmp_path: Path) -> None:
    """A v2 container's cgroup (docker's default there, a CI runner's) delegates no controller and
    is mounted read-only: the refusal came before any try (``cgroup.subtree_control lacks
    'memory'``), and said ``Hint: run as root`` to root. Made here as a read-only cgroup2 mount over
    ``/sys/fs/cgroup`` in a mount namespace of its own (this machine's memory controller is v1's, so
    that hierarchy delegates no ``memory``, as a container's does not)."""
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) to mount a cgroup2 file system of its own")
    (tmp_path / "job.py").write_text(V2_JOB)
    env = {**os.environ, "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1])}
    view = "mount -t tmpfs tmpfs /sys/fs/cgroup && mount -t cgroup2 -o ro cgroup2 /sys/fs/cgroup"
    ran = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                          f"{view} && exec {sys.executable} job.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    if "cgroup2" in ran.stderr and "REFUSED" not in ran.stdout:
        pytest.skip(f"no cgroup2 file system can be mounted here: {ran.stderr.strip()[-200:]}")
    assert "REFUSED cgroup v2 here does not delegate the memory controller" in ran.stdout, ran.stdout + ran.stderr
    assert "mounted read-only here" in ran.stdout and "run as root" not in ran.stdout, ran.stdout
