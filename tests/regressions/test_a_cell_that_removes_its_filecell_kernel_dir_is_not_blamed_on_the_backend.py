"""Found by a breaker helper (2026-12-05, hostile cells): a filecell cell that removed its own
kernel dir (its working directory: ``shutil.rmtree(os.getcwd())``, a cleanup gone wide) cut
the kernel off, and the next cell's ``died`` note blamed the backend alone: "the runner file ...
is gone: the backend did not keep the kernel dir from one execute to the next", on a backend
that keeps it (and so it did for a runner that ended and removed its dir itself: a SIGTERM). The
note now names the three causes, whole (a longer note lost its head to the 300-character cut of
the poll's output); the loss is reported as before (``died``, state lost) and the cell after runs on a fresh kernel.
"""

from __future__ import annotations

import pytest

REMOVE = "import os, shutil\nd = os.getcwd()\nos.chdir('/')\nshutil.rmtree(d)"


@pytest.mark.hermes_transports("filecell")
def test_the_note_names_the_cell_that_removed_the_kernel_dir(hermes_kernel):
    hermes_kernel.execute("kept = 'yes'")
    assert hermes_kernel.execute(REMOVE).status == "ok"

    cut = hermes_kernel.execute("kept")
    fresh = hermes_kernel.execute("6 * 7")

    assert (cut.status, cut.kernel.state_lost) == ("died", True), cut.summary()
    assert "HERMES-FILECELL-ERROR the runner file" in cut.kernel.note, cut.kernel.note
    assert "is gone: the runner ended, a cell removed its dir, or the backend did not keep" in cut.kernel.note
    assert (fresh.status, fresh.value) == ("ok", "42"), fresh.summary()
