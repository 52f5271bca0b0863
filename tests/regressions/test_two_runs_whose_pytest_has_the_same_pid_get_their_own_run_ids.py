"""Handed case B39, its second scenario: two CI containers share one docker engine, and their
pytest processes have the same pid (each is pid 7 in its own container). A run id made from the
pid (tox-docker's ``os.getpid()`` names gave 409 Conflict) is the same in both, so the runs share
labels and run dir names, and each one's sweeps and leak checks take the other's containers.

Two runs whose ``os.getpid()`` both say 7 must still get two run ids. The two-runs-at-once case
(``tests/plugin/test_concurrent_runs.py``) cannot see this: its runs have different pids, so a
run id hashed from the pid passed it (checked).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import RUN_TIMEOUT_S, UNRELATED_PLUGINS

#: pytest with ``os.getpid`` saying 7, as in a container whose pytest is its seventh process.
PID_7_PYTEST = "import os, sys, pytest; os.getpid = lambda: 7; sys.exit(pytest.console_main())"

INNER = """
import os, pathlib

from pytest_hermes_kernel.containers.sharing import current_run_id


def test_record_the_run_id():
    assert os.getpid() == 7
    pathlib.Path(os.environ["RUN_ID_FILE"]).write_text(current_run_id())
"""


def test_two_runs_whose_pytest_has_the_same_pid_get_their_own_run_ids(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_inner=INNER)
    ids = []
    for run in ("a", "b"):
        out = pytester.path / f"run-{run}.txt"
        proc = subprocess.run([sys.executable, "-c", PID_7_PYTEST, "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "-q",
                               "--hermes-transport=local"], cwd=pytester.path, env=dict(os.environ, RUN_ID_FILE=str(out)),
                              capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        ids.append(out.read_text())
    assert ids[0] != ids[1], f"two runs of pid 7 got the same run id {ids[0]!r}"
