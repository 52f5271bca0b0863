"""A run of an older kit that still runs keeps its containers through a newer kit's sweeps.

Kits before 2026-12-02 (0171977; e.g. 0dc088b) wrote a host's start time as psutil's
``create_time()``, wall-clock seconds (``org.hermes-kernel.host-start=1796528016.550``, members
``pid:1796528016.550:token``); this kit writes seconds since boot (``52959.980``). Read as a
since-boot time, the older value never matched: a newer kit's sweep, the one every session's
first docker use runs included, said ``would remove container e33288808cd5 (no live process uses
it)`` of a live older run's kernel host container, and removed it mid-test (the container went
within 2 s of its start on a machine where newer runs were starting).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from pytest_hermes_kernel.containers import sweep
from pytest_hermes_kernel.containers.labels import LABEL_HOST_START, host_is_gone, run_labels
from pytest_hermes_kernel.containers.sharing import member_alive

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="start times since boot come from /proc")


def _older_labels(pid: int, started: float) -> dict[str, str]:
    """The labels an older kit put on a container of host ``pid`` (``started``: its create_time)."""
    labels = run_labels(run_id="older-run", worker_id="master", role="docker-kernel-host")
    return {**labels, "org.hermes-kernel.host-pid": str(pid), LABEL_HOST_START: f"{started:.3f}"}


class _Engine:
    def __init__(self, labels: dict[str, str]) -> None:
        self.api = self
        self.labels = labels

    def containers(self, all: bool, filters: dict) -> list[dict]:  # noqa: A002 - docker-py's name
        return [{"Id": "older-runs-container", "Labels": self.labels}]


@pytest.fixture
def live_host():
    """A live process standing for the older kit's pytest, and its wall-clock create time."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        yield proc.pid, psutil.Process(proc.pid).create_time()
    finally:
        proc.kill()
        proc.wait()


def test_a_live_older_runs_container_is_not_swept(live_host, monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    pid, created = live_host
    labels = _older_labels(pid, created)
    monkeypatch.setattr(sweep, "remove_container", lambda cid, client: pytest.fail(f"removed {cid}"))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    assert not host_is_gone(labels)
    assert sweep.sweep_dead_runs(_Engine(labels), dry_run=True) == []
    assert sweep.sweep_dead_runs(_Engine(labels)) == []


def test_an_older_runs_container_goes_once_its_host_is_gone(live_host, monkeypatch: pytest.MonkeyPatch,
                                                            tmp_path: Path) -> None:
    pid, created = live_host
    other = psutil.Process(1)  # a live pid that started long before: the older host's pid reused
    removed: list[str] = []
    monkeypatch.setattr(sweep, "remove_container", lambda cid, client: removed.append(cid) or True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    assert host_is_gone(_older_labels(other.pid, created))
    assert host_is_gone(_older_labels(pid, created - 3600))
    assert sweep.sweep_dead_runs(_Engine(_older_labels(other.pid, created))) == ["older-runs-container"] == removed


def test_an_older_runs_live_member_is_alive(live_host) -> None:
    pid, created = live_host
    assert member_alive(f"{pid}:{created:.3f}:abcd1234")
    assert not member_alive(f"{pid}:{created - 3600:.3f}:abcd1234")
