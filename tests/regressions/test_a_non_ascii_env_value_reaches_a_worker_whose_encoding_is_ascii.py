"""Found by the breaker helper on hostile host environments (2026-12-05): a filecell kernel started
with ``env={"A": "\\u00fc\\u65e5"}`` by a host run under ``LC_ALL=C`` with ``PYTHONUTF8=0`` (its
shell, and so its worker, have an ASCII file system encoding) never ran its first cell: the
worker died setting ``os.environ['A']`` (``UnicodeEncodeError``) before the cell, was replaced,
died again, and so on: ``execute`` hung (killed after 100 s, nothing printed). The same value
from ``os.fsdecode`` (surrogates) and every other leg worked. A kernel's environment is set as
UTF-8 bytes (``os.environb``): every leg sees the same bytes.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support import REPO_ROOT

SCRIPT = """
import os, sys
from pytest_hermes_kernel import start_kernel
with start_kernel(sys.argv[1], env={"A": "\\u00fc\\u65e5", "B": os.fsdecode(b"\\xc3\\xa9")}, start_timeout=30) as k:
    print(ascii(k.execute("import os; (os.environb.get(b'A'), os.environb.get(b'B'))").value))
"""


@pytest.mark.parametrize("transport", ["local", "filecell"])
def test_the_worker_sets_a_non_ascii_value_and_runs_the_cell(transport):
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", SCRIPT, transport], capture_output=True, text=True, env=env,
                          timeout=60, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines()[-1] == ascii("(b'\\xc3\\xbc\\xe6\\x97\\xa5', b'\\xc3\\xa9')"), done.stdout
