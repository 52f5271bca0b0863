"""A script that started a filecell kernel and exited normally without shutting it down left the
kernel's runner and worker running, and its kernel dir, for the runner's idle timer (30 min),
where the README says a script that exits normally leaves no kernel behind: the exit hook closed
the transport, and ``FileCellTransport.close()`` ended nothing. Now the close kills the kernels
launched through it that no shutdown ended, and removes their dirs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from pytest_hermes_kernel.procs import pid_alive
from tests.support import REPO_ROOT, wait_until

SCRIPT = """
import sys
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport
shared = start_kernel("filecell")  # the process's shared transport
own = start_kernel(make_transport("filecell", root=sys.argv[1]))
for k in (shared, own):
    assert k.execute("x = 1; x").value == "1"
    print(k.runner_pid, k.pid, k.launched.kernel_dir)
"""


def test_a_script_that_exits_leaves_no_filecell_kernel_running(short_dir):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(short_dir / "root")], capture_output=True, text=True,
                          env=env, timeout=120, check=False, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-2000:]
    kernels = [line.split() for line in done.stdout.splitlines()]
    assert len(kernels) == 2, done.stdout
    try:
        for runner, worker, kdir in kernels:
            wait_until(lambda: not pid_alive(int(runner)) and not pid_alive(int(worker)), 5.0,
                       what=f"the script's filecell kernel (runner {runner}) to have ended with it")
            assert not os.path.exists(kdir), f"{kdir} outlived the script"
    finally:
        for runner, worker, _ in kernels:
            for pid in (int(runner), int(worker)):
                if pid_alive(pid):  # the old code's leftovers: not for the next test to find
                    os.kill(pid, signal.SIGKILL)
