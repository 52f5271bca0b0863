"""Found by the breaker helper on hostile host environments (2026-12-05): under ``python -OO``
(or ``PYTHONOPTIMIZE=2``), which drops docstrings, ``pytest --markers`` described each fault
marker with a bare ``.`` (``@pytest.mark.hermes_oom(limit_bytes: int): .``): the summaries came
from the parsers' ``__doc__``. They are read from the source when ``__doc__`` is gone."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import REPO_ROOT


def _hermes_markers(tmp_path, *flags: str) -> list[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    env.pop("PYTHONOPTIMIZE", None)
    done = subprocess.run([sys.executable, *flags, "-m", "pytest", "-p", "no:cacheprovider", "--markers"],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith("@pytest.mark.hermes_")]


def test_fault_markers_keep_their_summaries_under_python_oo(tmp_path):
    plain, stripped = _hermes_markers(tmp_path), _hermes_markers(tmp_path, "-OO")
    oom = [line for line in stripped if line.startswith("@pytest.mark.hermes_oom(")]
    assert oom == ["@pytest.mark.hermes_oom(limit_bytes: int): Run the kernel under a real memory limit of "
                   "``limit_bytes`` (a cgroup or the container's)."]
    assert stripped == plain
