"""A cell that caught the watchdog's ``KeyboardInterrupt`` and went on to its end said ``ok``.

Over its budget a cell gets SIGINT (``KeyboardInterrupt``). A cell that catches it (``try: ...
except KeyboardInterrupt: ...``, as code that cleans up on Ctrl-C does) ends by itself: the
result said ``status="ok"``, no ``watchdog``, no note, as if its work had run to its end within
its budget; a false pass. It is now ``timeout`` with ``watchdog="interrupted"``, its output and
value kept, the namespace kept, and a note saying the cell caught the interrupt. A cell that ends
on its own just as its budget runs out, never interrupted, is still ``ok``.
"""

from __future__ import annotations

CATCHES = """\
import time
try:
    time.sleep(30)
    finished = True
except KeyboardInterrupt:
    print('cleaning up')
    finished = False
'done'
"""


def test_a_caught_interrupt_of_the_ladder_is_a_timeout(hermes_kernel):
    hermes_kernel.execute("kept = 1")

    result = hermes_kernel.execute(CATCHES, timeout=0.5)

    assert (result.status, result.watchdog) == ("timeout", "interrupted"), result.summary()
    assert (result.value, result.stdout) == ("'done'", "cleaning up\n")
    assert "caught" in result.kernel.note and not result.kernel.state_lost
    assert hermes_kernel.execute("(kept, finished)").value == "(1, False)"


def test_a_cell_that_ends_on_its_own_is_ok(hermes_kernel):
    result = hermes_kernel.execute("import time; time.sleep(0.05); 'done'", timeout=5)
    assert (result.status, result.watchdog, result.value) == ("ok", None, "'done'"), result.summary()

