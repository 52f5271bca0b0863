"""Found by a breaker helper (2026-12-04): a cell that closed fd 1 (``os.close(1)``), or put
another file over it (``os.dup2(devnull, 1)``), or closed ``sys.stdout``, left every later cell
of the kernel without its output: ``print`` raised ``OSError: [Errno 9]`` (or ``ValueError``),
and what the processes it started wrote was lost, for the kernel's life, while the kernel said
it was healthy. DESIGN.md section 4: a cell's fd 1 and 2 are captured, its subprocesses' output
included. The worker now puts fd 1 and 2 back on its output pipes before each cell, and
replaces a closed ``sys.stdout``/``sys.stderr``. Every leg.
"""

from __future__ import annotations

import pytest

BREAKS = {
    "os.close(1) and os.close(2)": "import os; os.close(1); os.close(2)",
    "dup2 of /dev/null over fd 1 and 2": "import os; n = os.open(os.devnull, os.O_WRONLY); os.dup2(n, 1); os.dup2(n, 2)",
    "sys.stdout.close() and sys.stderr.close()": "import sys; sys.stdout.close(); sys.stderr.close()",
}


@pytest.mark.parametrize("breaks", list(BREAKS), ids=list(BREAKS))
def test_the_next_cell_has_its_output_captured_again(hermes_kernel, breaks):
    hermes_kernel.execute(BREAKS[breaks])
    r = hermes_kernel.execute("import subprocess, sys\n"
                              "subprocess.run(['sh', '-c', 'echo S1; echo E1 >&2'])\n"
                              "print('P1'); print('P2', file=sys.stderr)")
    assert (r.status, r.stdout, r.stderr) == ("ok", "S1\nP1\n", "E1\nP2\n"), (r.status, r.ename, r.evalue)
    assert not r.kernel.state_lost
