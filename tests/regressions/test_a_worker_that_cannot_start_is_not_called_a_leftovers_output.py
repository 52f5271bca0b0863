"""Seen (a breaker helper, 2026-12-06): after a restart whose new workers could not start (its
``cwd=`` removed by a cell; its memory cgroup removed), the cells' notes named why in the runner's
own line and then went on "... 188 bytes of stderr written while no cell ran (by a thread or process
an earlier cell left running) were dropped": those bytes were that line, the worker's own words, not
a leftover's output. The runner's own lines are not counted as dropped output now; a leftover's
still are (``test_output_written_between_cells_is_said_dropped.py``).
"""

from __future__ import annotations

import shutil

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport


@pytest.mark.parametrize("where", ["local", "local-spawn"])
def test_the_notes_after_a_restart_into_a_removed_cwd_claim_no_dropped_output(tmp_path, where) -> None:
    work = tmp_path / "work"
    work.mkdir()
    transport = make_transport("local", **({"server": False} if where == "local-spawn" else {}))
    try:
        with start_kernel(transport, cwd=str(work), start_timeout=30) as kernel:
            assert kernel.execute("x = 1").status == "ok"
            shutil.rmtree(work)
            kernel.restart()
            results = [kernel.execute("1") for _ in range(3)]
    finally:
        transport.close()

    notes = [r.kernel.note for r in results]
    said = [r.kernel.note + r.stderr for r in results if "cannot enter the working directory" in r.kernel.note + r.stderr]
    assert said, notes  # (in a note, or in a cell's stderr when the cell had begun as the worker said it)
    assert not any("written while no cell ran" in note for note in notes), notes
