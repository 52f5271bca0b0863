"""Output a thread (or process) of an earlier cell wrote while no cell ran vanished without a word.

Found by the user-reproduction round (2026-12-06): a cell that leaves a progress thread printing
after it ended. Output belongs to the cell running when it is written, and the runner drops what
comes while none runs; so the next cell, when quick, came back ``stdout == 'answer\\n'``, ``ok``,
no note: a test written to catch the leaked thread ("the next cell's stdout is only its own")
passed on the buggy code, and nothing said 10 lines had been dropped. Now the next cell's
``kernel.note`` says how many bytes of each stream were dropped between cells (its stdout is
still only what was written while it ran).
"""

from __future__ import annotations

import re
import time

LINES = [f"progress {i}\n" for i in range(20)]
LEAK = ("import threading, time\n"
        "_go = threading.Event()\n"
        "def _report():\n"
        "    _go.wait()\n"
        "    for i in range(20):\n"
        "        print('progress', i, flush=True); time.sleep(0.02)\n"
        "_t = threading.Thread(target=_report, daemon=True); _t.start()\n")
DROPPED = re.compile(r"(\d+) bytes of stdout written while no cell ran")


def test_every_byte_a_leftover_thread_wrote_is_in_a_cell_or_said_dropped(hermes_kernel):
    assert hermes_kernel.execute(LEAK).status == "ok"
    results = [hermes_kernel.execute("_go.set()")]  # the thread writes for ~0.4 s, mostly after this cell
    deadline = time.monotonic() + 30
    while True:
        results.append(hermes_kernel.execute("_t.is_alive()"))
        if results[-1].value == "False":
            break
        assert time.monotonic() < deadline, "the thread never ended"
        time.sleep(0.05)  # a gap between cells: what the thread writes then belongs to no cell
    results.append(hermes_kernel.execute("print('answer')"))

    seen = sum(len(r.stdout) for r in results[:-1])
    said = sum(int(n) for r in results for n in DROPPED.findall(r.kernel.note))
    assert seen + said == len("".join(LINES)), [r.summary() for r in results]
    assert said > 0, [r.summary() for r in results]
    assert results[-1].stdout == "answer\n", results[-1].summary()  # a cell's stdout is only its own
    again = hermes_kernel.execute("print('again')")
    assert again.kernel.note == "", again.summary()  # said once, on the cell after


def test_a_quiet_kernel_has_no_such_note(hermes_kernel):
    hermes_kernel.execute("import subprocess; subprocess.run(['true'])")
    result = hermes_kernel.execute("print('answer')")
    assert result.kernel.note == "" and result.stdout == "answer\n", result.summary()
