"""A filecell kernel at pytest's debugger prompt, held open past the runner's idle timer.

Nobody is attached to a filecell runner between cells, so its orphan timer is an idle timer
(``FilecellTransport(orphan_timeout=...)``, 1800 s by default). At a ``--pdb`` prompt held longer
than that the runner ends by itself, the host alive and holding the handle:
``p hermes_kernel.execute("rows").value`` printed ``None`` (the cell ``died``, state lost) and the
summary said ``died=1``. Not fixed: keeping it would need the host to reach the runner between
cells while the prompt is open (a poll with no cell), which the filecell stream has no message for.
"""

from __future__ import annotations

import pytest

from tests.pty_run import PtyRun
from tests.support import own_run_id

IDLE_S = 2.0

CONFTEST = f"""
import pytest
from pytest_hermes_kernel.transports import make_transport

@pytest.fixture
def hermes_transport():
    transport = make_transport("filecell", orphan_timeout={IDLE_S})
    yield transport
    transport.close()
"""

TEST = """
import os

def test_load(hermes_kernel):
    pid = hermes_kernel.execute("import os; rows = [3, 1, 2]; os.getpid()").value
    print(f"WORKER={pid}=")
    assert hermes_kernel.execute("len(rows)").value == "4"
"""


@pytest.mark.xfail(strict=True, reason="a filecell runner's idle timer (orphan_timeout) ends its kernel under a "
                                       "debugger prompt held open longer than it")
def test_the_filecell_kernel_is_alive_after_the_prompt_outlasted_its_idle_timer(pytester: pytest.Pytester) -> None:
    from tests.support import gone, wait_until

    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_prompt=TEST)
    _, own = own_run_id([])
    run = PtyRun(["-p", "no:cacheprovider", "-p", "no:randomly", "-s", *own, "--pdb"], pytester.path)
    try:
        worker = int(run.expect(r"WORKER=(\d+)=", 60).group(1))
        run.expect(r"\(Pdb\) ", 30)
        try:  # the old runner's end (a filecell runner on the local shell backend: a process here)
            wait_until(lambda: gone(worker), 3 * IDLE_S + 5)
        except Exception:  # noqa: BLE001 - alive all along: what the test wants
            pass
        mark = run.send('p hermes_kernel.execute("rows").value')
        run.expect(r"\(Pdb\) ", 30, after=mark)
        said = run.text[mark:]
        run.send("c")
        run.wait(60)
    finally:
        run.kill()
    assert "'[3, 1, 2]'" in said, said
