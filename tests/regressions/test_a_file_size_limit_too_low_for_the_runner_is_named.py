"""Found by the breaker helper on hostile host environments (2026-12-05): a host under a file
size limit too low for the kernel runner (``ulimit -f 1``, a CI sandbox's) failed every local
kernel start, on both paths, with "could not write the kernel runner into /tmp/hermes-kernel-...:
[Errno 27] File too large. Hint: is the kernel dir root writable (PYTEST_HERMES_KERNEL_DIR)?":
the root was writable, the hint sent the user the wrong way. The hint now names the limit
(``ulimit -f`` and its value) and how to lift it, and the start leaves no kernel dir.
"""

from __future__ import annotations

import glob
import os
import resource
import subprocess
import sys

from tests.support import REPO_ROOT

SCRIPT = """
import os, sys
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport
for server in (True, False):
    t = make_transport("local", server=server)
    try:
        start_kernel(t, start_timeout=30).shutdown()
        print("STARTED", server)
    except Exception as exc:
        print(type(exc).__name__, server, str(exc).replace(chr(10), " | "))
    finally:
        t.close()
"""


def _low_file_size_limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))


def test_the_start_names_ulimit_f_and_leaves_nothing(tmp_path):
    env = {**os.environ, "PYTEST_HERMES_KERNEL_DIR": str(tmp_path),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=120,
                          check=False, stdin=subprocess.DEVNULL, preexec_fn=_low_file_size_limit)
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert len(lines) == 2, done.stdout + done.stderr[-2000:]
    for server, line in zip(("True", "False"), lines):
        assert line.startswith(f"KernelStartError {server} could not write the kernel runner into "), line
        assert line.endswith("[Errno 27] File too large | Hint: this process may write no file over 4096 bytes "
                             "(its file size limit, ulimit -f): raise it (the kernel runner alone is about 200 KB), "
                             "or `ulimit -f unlimited`"), line
    assert glob.glob(str(tmp_path / "hermes-kernel-*")) == []
