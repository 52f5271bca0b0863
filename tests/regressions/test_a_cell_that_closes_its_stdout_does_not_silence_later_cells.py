"""Found by a breaker helper (2026-12-04): a cell that closed fd 1 (``os.close(1)``), or put
another file over it (``os.dup2(devnull, 1)``), or closed ``sys.stdout``, left every later cell
of the kernel without its output: ``print`` raised ``OSError: [Errno 9]`` (or ``ValueError``),
and what the processes it started wrote was lost, for the kernel's life, while the kernel said
it was healthy. DESIGN.md section 4: a cell's fd 1 and 2 are captured, its subprocesses' output
included. The worker now puts fd 1 and 2 back on its output pipes before each cell, and
replaces a closed ``sys.stdout``/``sys.stderr``. Every leg.

A first version kept copies of the pipes at fd 64 and up (a second breaker helper, the same
day): a cell's ``os.closerange`` closed them and the next cell killed the worker (``died``, exit
70), a file of the cell's that took fd 64 then received every later cell's output, and under
``ulimit -n 64`` no kernel ran a cell at all. The worker now holds no copy: it opens the pipe
again through its supervisor's write end (``/proc/<supervisor>/fd/<n>``).
"""

from __future__ import annotations

import resource
import subprocess
import sys

import pytest

BREAKS = {
    "os.close(1) and os.close(2)": "import os; os.close(1); os.close(2)",
    "dup2 of /dev/null over fd 1 and 2": "import os; n = os.open(os.devnull, os.O_WRONLY); os.dup2(n, 1); os.dup2(n, 2)",
    "sys.stdout.close() and sys.stderr.close()": "import sys; sys.stdout.close(); sys.stderr.close()",
    "closerange of every fd above 12, then files on the freed numbers": (
        "import os, tempfile\nos.closerange(13, 4096)\nd = tempfile.mkdtemp()\n"
        "files = [open(f'{d}/f{i}', 'w') for i in range(62)]"),
}


@pytest.mark.parametrize("breaks", list(BREAKS), ids=list(BREAKS))
def test_the_next_cell_has_its_output_captured_again(hermes_kernel, breaks):
    hermes_kernel.execute(BREAKS[breaks])
    r = hermes_kernel.execute("import subprocess, sys\n"
                              "subprocess.run(['sh', '-c', 'echo S1; echo E1 >&2'])\n"
                              "print('P1'); print('P2', file=sys.stderr)")
    assert (r.status, r.stdout, r.stderr) == ("ok", "S1\nP1\n", "E1\nP2\n"), (r.status, r.ename, r.evalue)
    assert not r.kernel.state_lost
    if "files" in BREAKS[breaks]:  # the cell's own files received nothing of it
        assert hermes_kernel.execute("[f.flush() for f in files]\n"
                                     "sum(os.path.getsize(f.name) for f in files)").value == "0"


ULIMIT_64 = """
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports.local import LocalTransport
for server in (True, False):
    t = LocalTransport(server=server)
    with start_kernel(t, timeout=20) as k:
        r = k.execute("import os; os.close(1); 1 + 1")
        r = k.execute("print('P'); 2 + 2")
        print(server, r.status, r.value, repr(r.stdout))
    t.close()
"""


def test_a_low_open_file_limit_still_runs_cells_and_restores_stdout():
    """``ulimit -n 64`` (a container run with ``--ulimit nofile=64``): kernels run cells."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

    done = subprocess.run([sys.executable, "-c", ULIMIT_64], capture_output=True, text=True, timeout=120,
                          preexec_fn=limit)  # noqa: PLW1509 - only setrlimit, in the child
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.splitlines() == ["True ok 4 'P\\n'", "False ok 4 'P\\n'"], done.stdout

