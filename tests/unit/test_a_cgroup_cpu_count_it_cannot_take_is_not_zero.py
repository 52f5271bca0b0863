"""``benchmarks/cgroup_cpu.sh``: a CPU count it cannot take is ``n/a (why)``, never ``0.0``.

Seen (breaker review, 2026-12-06): without the engine's pid file (an engine started with another
``--pidfile``), or with the systemd cgroup driver (no ``cpuacct/docker`` cgroup), the script
printed "docker daemons 0.0" and "containers 0.0": the numbers docs/testing.md quotes for a suite
run, silently zero. Run here on a made-up controller root (``PYTEST_HERMES_CPUACCT_ROOT``), never
on the machine's cgroups.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.support import REPO_ROOT

SCRIPT = REPO_ROOT / "benchmarks" / "cgroup_cpu.sh"


def _run(root: Path, pidfile: Path) -> str:
    env = dict(os.environ, PYTEST_HERMES_CPUACCT_ROOT=str(root), PYTEST_HERMES_DOCKER_PIDFILE=str(pidfile))
    done = subprocess.run(["bash", str(SCRIPT), "t", "true"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stderr.strip().splitlines()[-1]


def _counter(path: Path, ns: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "cpuacct.usage").write_text(f"{ns}\n")


def test_no_engine_pid_file_and_no_docker_cgroup_are_said(tmp_path: Path) -> None:
    _counter(tmp_path, 0)
    _counter(tmp_path / "hermes-prof-t", 2_000_000_000)
    said = _run(tmp_path, tmp_path / "no-such.pid")
    assert "command tree 0.0" in said, said
    assert f"docker daemons n/a (no engine pid file {tmp_path / 'no-such.pid'})" in said, said
    assert f"containers n/a (no docker cgroup {tmp_path / 'docker'})" in said, said


def test_counts_it_can_take_are_figures(tmp_path: Path) -> None:
    for cgroup in (tmp_path, tmp_path / "hermes-prof-t", tmp_path / "hermes-prof-dockerd", tmp_path / "docker"):
        _counter(cgroup, 5_000_000_000)
    pidfile = tmp_path / "docker.pid"
    pidfile.write_text("999999999\n")  # a made-up engine pid, written only into the made-up cgroup
    said = _run(tmp_path, pidfile)
    assert "command tree 0.0  docker daemons 0.0  containers 0.0  (exit 0)" in said, said
    assert (tmp_path / "hermes-prof-dockerd" / "cgroup.procs").read_text().split() == ["999999999"]
