"""Seen (a breaker helper, 2026-12-06, on a copy of a cgroup v2 layout: this machine has v1): a CI
job run in a leaf cgroup whose parent has the memory limit but gives its children no memory
controller (``ci`` with ``memory.max``, its ``cgroup.subtree_control`` without ``memory``; the job
in ``ci/job``). The leaf has no ``memory.events``: the worker's counter was looked up in the leaf,
then at the mount's top (which on a host has none either), so a cell that outgrew ``ci``'s limit
was ``died``, ``killed by signal 9 (SIGKILL; possible OOM: the kernel has no memory cgroup of its
own to tell)``. On v2 the nearest ancestor with ``memory.events`` is read now: its count is
hierarchical, the leaf's OOM kills included (a cgroup shared with the job's other processes:
kernels there are told so). v1 has a counter in every memory cgroup: unchanged.

The same for a kernel given ``cgroup_procs=`` of such a leaf: no counter beside it, so the
supervisor looked the worker's cgroup up right after its fork, before or after its join by timing
(the race ``test_an_oom_kill_is_read_from_the_cgroup_the_worker_joins.py`` names): the nearest
ancestor's is read from the config now.
"""

from __future__ import annotations

import selectors
from pathlib import Path

from pytest_hermes_kernel.kernel.runner import procfs
from pytest_hermes_kernel.kernel.runner.worker_process import WorkerProcess

EVENTS = "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\noom_group_kill 0\n"


def _tree(base: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(text)


def test_the_nearest_ancestor_with_memory_events_is_read(tmp_path: Path) -> None:
    _tree(tmp_path, {"proc/7/cgroup": "0::/ci/job\n", "cg/cgroup.controllers": "cpu memory\n",
                     "cg/ci/memory.events": EVENTS, "cg/ci/job/cgroup.procs": "7\n"})
    found = procfs.memory_cgroup_oom_file(7, root=str(tmp_path / "cg"), proc=str(tmp_path / "proc"))

    assert found == str(tmp_path / "cg/ci/memory.events")
    assert procfs.read_oom_kills(found) == 1


def test_a_leaf_with_its_own_counter_is_read_first_and_v1_is_unchanged(tmp_path: Path) -> None:
    _tree(tmp_path, {"proc/7/cgroup": "0::/ci/job\n", "proc/8/cgroup": "4:memory:/ci/job\n",
                     "cg/ci/memory.events": EVENTS, "cg/ci/job/memory.events": EVENTS,
                     "cg/memory/ci/memory.oom_control": "oom_kill 0\n"})
    root, proc = str(tmp_path / "cg"), str(tmp_path / "proc")

    assert procfs.memory_cgroup_oom_file(7, root=root, proc=proc) == str(tmp_path / "cg/ci/job/memory.events")
    assert procfs.memory_cgroup_oom_file(8, root=root, proc=proc) is None  # v1: its own dir or the mount's top


def test_a_kernel_given_such_a_leafs_cgroup_procs_reads_the_ancestors_counter_before_any_fork(tmp_path: Path) -> None:
    _tree(tmp_path, {"cg/cgroup.procs": "", "cg/cgroup.controllers": "cpu memory\n", "cg/ci/cgroup.procs": "",
                     "cg/ci/memory.events": EVENTS, "cg/ci/job/cgroup.procs": ""})
    config = {"cgroup_procs": str(tmp_path / "cg/ci/job/cgroup.procs")}

    assert procfs.configured_oom_file(config) == str(tmp_path / "cg/ci/memory.events")
    worker = WorkerProcess(config, selectors.DefaultSelector(), (-1, -1))
    assert worker.oom_file == str(tmp_path / "cg/ci/memory.events")
    _tree(tmp_path, {"pids/cgroup.procs": "", "pids/ci/cgroup.procs": ""})  # v1's pids hierarchy: no memory counter
    assert procfs.configured_oom_file({"cgroup_procs": str(tmp_path / "pids/ci/cgroup.procs")}) is None
