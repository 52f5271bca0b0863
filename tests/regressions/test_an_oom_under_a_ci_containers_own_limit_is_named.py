"""Seen (a breaker helper running the kit in CI job containers, 2026-12-06): in a container with a
memory limit (``docker run --memory 256m``, a Kubernetes pod's limit) a cell that outgrew it was
reported as ``died``, ``signal=9``, ``oom_killed=False`` wherever the container had no
``/.dockerenv`` or ``/run/.containerenv`` (containerd, a Kubernetes pod; simulated by removing the
file: ``2 failed``, local and filecell). The worker's memory cgroup was looked up at
``/sys/fs/cgroup/memory`` + its path in ``/proc/PID/cgroup`` (``/kubepods/.../ID``, which a
container does not see: its own cgroup is mounted at ``/sys/fs/cgroup/memory``), or skipped as the
host's root cgroup when a cgroup namespace of its own named it ``/``; only those marker files made
the code read the mount's root instead. Now the mount's top is read wherever the cgroup's own
path is not there (and it is not the hierarchy's real root), marker files or not: ``died``,
``reason="oom_killed"``.

Both container views are made here on this host without an engine: the process is moved into a
memory cgroup with a limit, then in a mount namespace of its own that cgroup is bind-mounted over
``/sys/fs/cgroup/memory`` read-only (docker's and the kubelet's view on cgroup v1, the host's
cgroup namespace), or a cgroup namespace of its own mounts the hierarchy (``--cgroupns=private``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_hermes_kernel
from pytest_hermes_kernel.faults import cgroup
from pytest_hermes_kernel.faults.cgroup import V1_ROOT, create_memory_cgroup
from pytest_hermes_kernel.kernel.runner import procfs

CELL = """
import os
from pytest_hermes_kernel import start_kernel

print("MARKERS", os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"))
with start_kernel({transport!r}, timeout=60) as k:
    r = k.execute("hog = []\\nwhile True: hog.append(b'x' * 2**22)")
    print("RESULT", r.status, r.kernel.reason, r.kernel.oom_killed, r.kernel.signal)
"""

VIEWS = {
    "bind": f"mount --bind \"$CG\" {V1_ROOT} && mount -o remount,bind,ro {V1_ROOT}",
    "cgroupns": f"umount -l {V1_ROOT} && mount -t cgroup -o memory cgroup {V1_ROOT}",
}
#: A root of the job's own (a tmpfs, this machine's dirs bound in) without this machine's
#: ``/.dockerenv`` (it runs in a container itself): what a containerd or Kubernetes job sees.
NO_MARKERS = ('mount -t tmpfs tmpfs "$NEWROOT" && for d in $(ls /); do if [ -L "/$d" ]; then cp -a "/$d" "$NEWROOT/"; '
              'elif [ -d "/$d" ]; then mkdir "$NEWROOT/$d" && mount --rbind "/$d" "$NEWROOT/$d"; fi; done')


@pytest.mark.parametrize("transport", ["local", "filecell"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_a_cell_over_its_containers_memory_limit_is_oom_killed(tmp_path: Path, view: str, transport: str) -> None:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        pytest.skip("needs root and unshare(1) to make a container's view of its memory cgroup")
    if not os.path.exists(os.path.join(V1_ROOT, "memory.limit_in_bytes")):
        pytest.skip("needs a cgroup v1 memory hierarchy (this machine's; v2 is covered by the unit test)")
    cg = create_memory_cgroup(128 * 2**20)
    script = tmp_path / "job.py"
    script.write_text(CELL.format(transport=transport))
    (tmp_path / "root").mkdir()
    env = {**os.environ, "CG": cg.path, "NEWROOT": str(tmp_path / "root"),
           "PYTHONPATH": str(Path(pytest_hermes_kernel.__file__).parents[1])}
    inner = f"{VIEWS[view]} && {NO_MARKERS} && exec chroot \"$NEWROOT\" {sys.executable} {script}"
    ns = "--cgroup " if view == "cgroupns" else ""
    try:
        ran = subprocess.run(["sh", "-c", f'echo $$ > "$CG/cgroup.procs" && exec unshare --mount {ns}--fork '
                              f'sh -c \'{inner}\''], env=env, capture_output=True, text=True, timeout=120)
    finally:
        cg.remove()
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "MARKERS False" in ran.stdout, ran.stdout  # the job's root has neither marker file
    assert "RESULT died oom_killed True 9" in ran.stdout, ran.stdout + ran.stderr


def _tree(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)


@pytest.mark.parametrize("cgroup_line, counter", [
    ("0::/", "memory.events"),  # v2, a cgroup namespace of its own (docker's default on v2, a pod)
    ("0::/kubepods/pod1/c1", "memory.events"),  # v2, the host's namespace: its path is not in its view
    ("4:memory:/kubepods/pod1/c1", "memory/memory.oom_control"),  # v1, a kubelet's container
])
def test_the_counter_is_read_at_the_top_of_the_containers_mount(tmp_path: Path, cgroup_line: str,
                                                                counter: str) -> None:
    _tree(tmp_path, {"proc/7/cgroup": cgroup_line + "\n", f"sys/fs/cgroup/{counter}": "oom_kill 0\n"})
    found = procfs.memory_cgroup_oom_file(7, root=str(tmp_path / "sys/fs/cgroup"), proc=str(tmp_path / "proc"))
    assert found == str(tmp_path / "sys/fs/cgroup" / counter)


def test_a_hosts_own_cgroup_is_read_and_the_hierarchys_real_root_never(tmp_path: Path) -> None:
    """A v1 root (its ``release_agent`` says so) counts the whole machine's OOM kills: not read."""
    _tree(tmp_path, {"proc/7/cgroup": "4:memory:/ci/job\n", "proc/8/cgroup": "4:memory:/\n",
                     "memory/memory.oom_control": "oom_kill 3\n", "memory/release_agent": "",
                     "memory/ci/job/memory.oom_control": "oom_kill 0\n"})
    root, proc = str(tmp_path), str(tmp_path / "proc")
    assert procfs.memory_cgroup_oom_file(7, root=root, proc=proc) == str(tmp_path / "memory/ci/job/memory.oom_control")
    assert procfs.memory_cgroup_oom_file(8, root=root, proc=proc) is None


def test_the_mount_that_shows_a_cgroup_is_found_in_mountinfo(tmp_path: Path) -> None:
    """Where ``hermes_oom`` looks for the pytest process's own cgroup (faults/cgroup.py): at the
    mount that shows it, one hidden by a later mount on the same mount point left out."""
    (tmp_path / "mountinfo").write_text(
        "30 29 0:26 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
        "31 30 0:26 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory\n"
        "32 29 0:27 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n")
    mounts = cgroup.cgroup_mounts(str(tmp_path / "mountinfo"))
    assert mounts[1] == ("cgroup", "rw,memory", "/docker/abc", "/sys/fs/cgroup/memory")
    assert cgroup.cgroup_dir("/docker/abc", mounts, "memory") == "/sys/fs/cgroup/memory"
    assert cgroup.cgroup_dir("/docker/abc/x", mounts, "memory") == "/sys/fs/cgroup/memory/x"
    assert cgroup.cgroup_dir("/docker/abcdef", mounts, "memory") is None  # only the hidden mount showed it
    assert cgroup.cgroup_dir("/docker/abc", mounts, "cpu") is None
