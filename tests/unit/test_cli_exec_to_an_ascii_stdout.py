"""Found by the breaker helper on hostile host environments (2026-12-05): ``hermes-kernel exec ID
"print('h\\u00e9llo')"`` on a kept kernel, run where stdout is ASCII (``LC_ALL=C`` with
``PYTHONUTF8=0``), ended in a ``UnicodeEncodeError`` traceback from ``cli.py`` (exit 1) and printed
nothing of the cell: every cell whose output or value is not ASCII. The command now writes what
the kernel printed as UTF-8 bytes, as ``cat`` of the same output would."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

from tests.support import REPO_ROOT, gone, wait_until

FAILING = """
def test_fails(hermes_kernel):
    hermes_kernel.execute("x = 41")
    assert hermes_kernel.execute("x").value == "42"
"""


def test_exec_writes_a_cells_non_ascii_output_to_an_ascii_stdout(tmp_path: Path) -> None:
    (tmp_path / "tmp").mkdir()
    (tmp_path / "test_inner.py").write_text(FAILING)
    env = {**os.environ, "TMPDIR": str(tmp_path / "tmp"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    inner = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_inner.py",
                            "--hermes-transport=local", "--hermes-keep-failed", "--hermes-keep-failed-ttl=60"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    kept = re.search(r"kept for post-mortem: test_inner.py::test_fails\[local\]: kernel (\w+) on local "
                     r"\(worker pid \d+, runner pid (\d+)\)", inner.stdout)
    assert kept, inner.stdout[-3000:]
    kernel_id, runner = kept.group(1), int(kept.group(2))
    try:
        done = subprocess.run([sys.executable, "-m", "pytest_hermes_kernel.cli", "exec", kernel_id,
                               "print('h\\u00e9llo \\u65e5'); x + 1"], capture_output=True, timeout=60, check=False,
                              env={**env, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"})
        assert (done.returncode, done.stdout) == (0, "h\u00e9llo \u65e5\n42\n".encode()), done.stderr.decode()[-2000:]
    finally:
        os.kill(runner, signal.SIGKILL)  # this test's own kept kernel, by its runner's pid
        wait_until(lambda: gone(runner), 10.0, what="the kept kernel's runner to end")
