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
