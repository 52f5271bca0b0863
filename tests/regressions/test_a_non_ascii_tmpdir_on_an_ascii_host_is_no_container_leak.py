"""Found by the breaker helper on hostile host environments (2026-12-05): a host whose Python has
an ASCII file system encoding (``LC_ALL=C`` with ``PYTHONUTF8=0``) and a temp dir whose name is
not ASCII (``TMPDIR=/tmp/tü``) had every docker test of the run flagged "leaked container:
container ... (docker-kernel-host, running); no live process holds it" after its teardown (6
``HermesLeakWarning``s for 5 docker tests, each an error under ``--hermes-leak-check=error``), and
the run took 45 s instead of 10. The run's state file path went into the container's label as
surrogates, which the engine turned into U+FFFD: the label named no file, so no member held the
live shared container. Path labels now carry the path's bytes as UTF-8, read back as this host's
name.
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support import REPO_ROOT

TESTS = """
def test_one(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"


def test_two(hermes_kernel):
    assert hermes_kernel.execute("2 + 2").value == "4"
"""


def test_docker_tests_under_a_non_ascii_tmpdir_leak_nothing(docker_ready, tmp_path):
    tmpdir = os.fsencode(str(tmp_path)) + b"/t\xc3\xbc"
    os.mkdir(tmpdir)
    (tmp_path / "test_inner.py").write_text(TESTS)
    env = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0",
           "TMPDIR": os.fsdecode(tmpdir),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "test_inner.py",
                           "--hermes-transport=docker", "--hermes-leak-check=error"], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=240, check=False, stdin=subprocess.DEVNULL)
    out = done.stdout + done.stderr
    assert "leaked container" not in out, out[-3000:]
    assert done.returncode == 0 and "2 passed" in out, out[-3000:]
