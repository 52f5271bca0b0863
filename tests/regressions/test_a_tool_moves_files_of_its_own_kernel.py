"""A host tool may ``upload`` into (and ``download`` from) the kernel whose cell called it, and
``start()`` of a started kernel returns at once while a cell runs in another thread.

``upload``/``download`` first call ``start()``, which took the kernel's cell lock to see that the
kernel had started: the running cell holds that lock, so from a tool of that cell (a tool that
fetches a data set for the cell to read) the call waited for the cell, and the cell for the tool:
both hung forever (a tool's time pauses the budget, so no ``timeout=`` ended it). From another
thread, ``start()`` of a started kernel waited for the whole running cell, though the API says
later calls return at once.
"""

from __future__ import annotations

import time
from pathlib import Path

from pytest_hermes_kernel.contract._probes import CellStarted, call_in_thread, run_in_thread

DEADLINE_S = 15.0


def test_a_tool_uploads_a_file_its_own_cell_then_reads(make_kernel, tmp_path: Path) -> None:
    data = tmp_path / "data.csv"
    data.write_text("a,b\n1,2\n")
    box: dict[str, object] = {}

    def fetch() -> int:  # in a thread of its own with a deadline: the bug hangs it
        return call_in_thread(box["k"].upload, data, "data.csv").result(timeout=DEADLINE_S).files

    k = box["k"] = make_kernel(tools={"fetch": fetch}, timeout=60)
    r = k.execute("import hermes_tools\nn = hermes_tools.fetch()\nn, open('data.csv').read()")

    assert r.status == "ok" and r.value == repr((1, "a,b\n1,2\n")), r.summary()


def test_a_tool_downloads_what_its_own_cell_wrote(make_kernel, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    box: dict[str, object] = {}

    def collect() -> int:
        return call_in_thread(box["k"].download, "out.txt", out).result(timeout=DEADLINE_S).files

    k = box["k"] = make_kernel(tools={"collect": collect}, timeout=60)
    r = k.execute("import hermes_tools\nopen('out.txt', 'w').write('done')\nhermes_tools.collect()")

    assert r.status == "ok" and r.value == "1", r.summary()
    assert out.read_text() == "done"


def test_start_of_a_started_kernel_returns_at_once_while_a_cell_runs(make_kernel) -> None:
    probe = CellStarted()
    k = make_kernel(tools=probe.tools())
    cell = run_in_thread(k, probe.CODE + "import time\ntime.sleep(20)\n'slept'")
    probe.wait()
    began = time.monotonic()

    assert call_in_thread(k.start).result(timeout=DEADLINE_S) is k
    assert time.monotonic() - began < 5.0, "start() waited for the running cell"
    assert cell.done() is False, "the cell was still running"
    k.interrupt()
    assert cell.result(timeout=DEADLINE_S).status == "interrupted"
