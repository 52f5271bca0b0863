"""Ctrl-C in a cell typed at pytest's debugger prompt interrupts that cell; the kernel and its state stay.

At the ``--pdb`` prompt of a failed test the user runs a cell that takes long
(``p hermes_kernel.execute("time.sleep(30)")``) and presses Ctrl-C. The ``KeyboardInterrupt`` came
out of ``execute``, which ends the kernel (docs/reference.md): pdb printed ``*** KeyboardInterrupt``,
and the next ``p hermes_kernel.execute("rows")`` ran on a fresh worker, ``state_lost=True``, "the
cell's wait failed: KeyboardInterrupt", the state the test failed with gone. While the prompt is
open, Ctrl-C now interrupts the running cell, as ``hermes-kernel attach`` does: it ends
``interrupted``, the namespace kept.
"""

from __future__ import annotations

import re

import pytest

from tests.pty_run import PtyRun
from tests.support import own_run_id, run_leftovers, wait_until

TEST = """
from pathlib import Path

import pytest

@pytest.mark.hermes_kernel(tools={"started": lambda: Path("cell-started").touch()})
def test_load(hermes_kernel):
    hermes_kernel.execute("rows = [3, 1, 2]; total = sum(rows) + 1")
    assert hermes_kernel.execute("total").value == "6"
"""


@pytest.mark.parametrize("transport", ["local", "docker"])
def test_ctrl_c_interrupts_the_cell_and_keeps_the_state(pytester: pytest.Pytester, transport: str) -> None:
    pytester.makepyfile(test_prompt=TEST)
    run_id, own = own_run_id([])
    run = PtyRun(["-p", "no:cacheprovider", "-p", "no:randomly", *own, "--pdb", f"--hermes-transport={transport}"],
                 pytester.path)
    try:
        run.expect(r"\(Pdb\) ", 120)
        mark = run.send('p hermes_kernel.execute("import hermes_tools, time; hermes_tools.started(); time.sleep(60)")')
        wait_until(lambda: (pytester.path / "cell-started").exists(), 30)  # (a host tool the cell called)
        run.ctrl_c()
        run.expect(r"\(Pdb\) ", 30, after=mark)
        interrupted = run.text[mark:]
        mark = run.send('p (hermes_kernel.execute("rows").value, hermes_kernel.generation)')
        run.expect(r"\(Pdb\) ", 30, after=mark)
        after = run.text[mark:]
        mark = run.send("c")
        status = run.wait(60)
    finally:
        run.kill()
    assert "status='interrupted'" in interrupted and "state_lost=False" in interrupted, interrupted
    assert "('[3, 1, 2]', 0)" in after, after  # the same worker, its namespace whole
    tail = run.text[mark:]
    assert status == 1 and re.search(r"\b1 failed\b", tail) and "died=" not in tail, tail
    assert not run_leftovers(run_id)
