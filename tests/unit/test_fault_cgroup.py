"""faults.cgroup: a memory cgroup for ``hermes_oom`` on local is one whose OOM kills can be counted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.faults import cgroup


@pytest.mark.parametrize(("version", "counter"), [(1, "memory.oom_control"), (2, "memory.events")])
def test_a_cgroup_without_an_oom_kill_counter_is_no_cgroup_for_oom(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   version: int, counter: str) -> None:
    """Linux before 4.13 writes no ``oom_kill`` line: the group was made, the kernel ran in it, and
    its OOM kill was reported as a plain death (``reason="died"``, ``oom_killed=False``) instead of
    the test skipping with the reason."""
    root = tmp_path / "cgroup"
    root.mkdir()
    if version == 1:
        (root / "memory.limit_in_bytes").write_text("")
        monkeypatch.setattr(cgroup, "V1_ROOT", str(root))
        monkeypatch.setattr(cgroup, "V2_ROOT", str(tmp_path / "none"))
        lines = "oom_kill_disable 0\nunder_oom 0\n"
    else:
        (root / "cgroup.controllers").write_text("memory\n")
        (root / "cgroup.subtree_control").write_text("memory\n")
        monkeypatch.setattr(cgroup, "V1_ROOT", str(tmp_path / "none"))
        monkeypatch.setattr(cgroup, "V2_ROOT", str(root))
        lines = "low 0\nhigh 0\nmax 0\noom 0\n"
    made = os.mkdir

    def mkdir(path: str, *args: int) -> None:  # what the kernel's cgroupfs puts in a new group
        made(path, *args)
        Path(path, counter).write_text(lines)

    removed: list[str] = []
    with monkeypatch.context() as mp:
        mp.setattr(os, "mkdir", mkdir)
        mp.setattr(os, "rmdir", removed.append)  # cgroupfs removes a group with its files in it
        with pytest.raises(TransportUnavailableError, match=f"no oom_kill counter in the memory cgroup at .*/{counter}"):
            cgroup.create_memory_cgroup(64 * 2**20, name="old-kernel")
    assert removed == [str(root / "old-kernel")]


def test_this_machines_cgroup_counts_oom_kills() -> None:
    """Where a group can be made here, it counts (0 before any kill)."""
    try:
        cg = cgroup.create_memory_cgroup(64 * 2**20)
    except TransportUnavailableError as exc:
        pytest.skip(str(exc))
    try:
        assert cg.oom_kills() == 0
    finally:
        cg.remove()


@pytest.mark.parametrize(("subtree", "verdict"), [("cpu io\n", "no writable memory cgroup: hermes_oom skips"),
                                                  ("cpu memory\n", "memory cgroups available for hermes_oom")])
def test_doctor_says_hermes_oom_skips_where_v2_does_not_delegate_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, subtree: str, verdict: str) -> None:
    """On cgroup v2 a parent this process may write is no place for a memory cgroup unless its
    ``cgroup.subtree_control`` lists ``memory``. ``hermes-kernel doctor`` said "memory cgroups
    available" there, and every ``hermes_oom`` test then skipped, naming the delegation."""
    from pytest_hermes_kernel.cli import _check_local

    root = tmp_path / "cgroup2"
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu io memory\n")
    (root / "cgroup.subtree_control").write_text(subtree)
    monkeypatch.setattr(cgroup, "V1_ROOT", str(tmp_path / "none"))
    monkeypatch.setattr(cgroup, "V2_ROOT", str(root))
    monkeypatch.setattr(cgroup, "own_cgroup", lambda version: None)
    assert _check_local().detail.endswith(verdict)
    assert cgroup.writable_parent() == (str(root) if "memory" in subtree else None)


def test_on_v2_the_group_is_made_in_the_nearest_ancestor_that_delegates_memory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A delegated user on cgroup v2 runs pytest in a leaf (``ci/job``) below its cgroup (``ci``,
    ``memory`` in its ``cgroup.subtree_control``): the leaf holds processes, so it cannot delegate.
    The kernel's group was tried at the root and in the leaf only, and every ``hermes_oom`` test
    skipped; it is made in ``ci``, the nearest ancestor that delegates."""
    root = tmp_path / "cgroup2"
    for d, subtree in ((root, "cpu\n"), (root / "user", "memory\n"), (root / "user" / "ci", "memory\n"),
                       (root / "user" / "ci" / "job", "")):
        d.mkdir()
        (d / "cgroup.subtree_control").write_text(subtree)
    (root / "cgroup.controllers").write_text("cpu memory\n")
    monkeypatch.setattr(cgroup, "V1_ROOT", str(tmp_path / "none"))
    monkeypatch.setattr(cgroup, "V2_ROOT", str(root))
    monkeypatch.setattr(cgroup, "own_cgroup", lambda version: "/user/ci/job")
    made = os.mkdir

    def mkdir(path: str, *args: int) -> None:  # what the kernel's cgroupfs puts in a new group
        made(path, *args)
        Path(path, "memory.events").write_text("oom 0\noom_kill 0\n")

    monkeypatch.setattr(os, "mkdir", mkdir)
    assert cgroup.writable_parent() == str(root / "user" / "ci")
    cg = cgroup.create_memory_cgroup(64 * 2**20, name="kernel")
    assert (cg.path, cg.oom_kills()) == (str(root / "user" / "ci" / "kernel"), 0)
    assert (root / "user" / "ci" / "kernel" / "memory.max").read_text() == str(64 * 2**20)
