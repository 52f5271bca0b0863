"""Found by the breaker helper on hostile host environments (2026-12-05): a filecell kernel made
with ``cwd=`` whose cell removed that directory and then ended its worker (``os.rmdir(cwd);
os._exit(3)``) hung on its next ``execute`` for good (killed after 50 s): each new worker died
entering the missing cwd before the cell, the runner said "not run", and the handle started
another, without end (local and docker said ``died``, exit code 70, at once). A worker started
for a cell that dies before it now ends that cell ``died`` ("the kernel died before it ran the
cell, on a new worker"); the next cell tries another.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT

SCRIPT = """
import os, sys, time
from pytest_hermes_kernel import start_kernel
cwd = sys.argv[2]
with start_kernel(sys.argv[1], cwd=cwd, start_timeout=30) as k:
    assert k.execute("1").value == "1"
    first = k.execute(f"import os; os.rmdir({cwd!r}); os._exit(3)")
    began = time.monotonic()
    r = k.execute("2")
    print(first.status, r.status, r.kernel.exit_code, r.kernel.state_lost, time.monotonic() - began)
"""


@pytest.mark.parametrize("transport", ["local", "filecell"])
def test_the_next_cell_is_died_within_seconds(transport, tmp_path):
    cwd = tmp_path / "wd"
    cwd.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", SCRIPT, transport, str(cwd)], capture_output=True, text=True,
                          env=env, timeout=30, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    *said, waited_s = done.stdout.split()
    assert said == ["died", "died", "70", "True"], done.stdout
    assert float(waited_s) < 15.0, done.stdout  # a hang, not a speed: it never ended before (it took 0.1-1 s)
