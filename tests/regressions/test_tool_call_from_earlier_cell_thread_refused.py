"""Seed bug: a thread left behind by an earlier cell could call tools with that cell's authority
after it settled. Found while writing this: a call still in flight when its cell ended made the
worker read the channel from two threads, and the thread swallowed the next cell's ``execute``
(the next cell hung until the watchdog killed the kernel, or forever without a timeout).

Every call gets exactly one answer, from the host while its cell runs, or a refusal.
"""

from __future__ import annotations

import time
from pathlib import Path

from pytest_hermes_kernel import KernelKey, WatchdogPolicy
from tests.support import wait_until

KEY = KernelKey(owner="conv-tools")
SPAWN_LATE_CALLER = """
import hermes_tools, threading, time, os
out = []
def late():
    while not os.path.exists({go!r}):
        time.sleep(0.01)
    try:
        out.append(hermes_tools.add(a=1, b=2))
    except hermes_tools.ToolError as exc:
        out.append("refused: " + str(exc))
    open({done!r}, "w").close()
threading.Thread(target=late).start()
"""


def test_call_from_a_thread_after_its_cell_settled_is_refused(make_registry, tmp_path: Path):
    ran: list[tuple[int, int]] = []
    reg = make_registry(tools={"add": lambda a, b: ran.append((a, b)) or a + b})
    go, done = tmp_path / "go", tmp_path / "done"
    assert reg.execute(KEY, SPAWN_LATE_CALLER.format(go=str(go), done=str(done))).status == "ok"

    go.touch()
    wait_until(done.exists, 5.0, what="the left-over thread's tool call to be answered")

    r = reg.execute(KEY, "out")
    assert r.value is not None and r.value.startswith("['refused: No active cell")
    assert ran == [] and r.tool_calls == ()


def test_call_in_flight_when_its_cell_ends_does_not_swallow_the_next_cell(make_kernel):
    def slow(**_kw):
        time.sleep(0.5)
        return 1

    k = make_kernel(tools={"slow": slow}, watchdog=WatchdogPolicy(interrupt_grace=1.0, kill_grace=1.0))
    first = k.execute("import hermes_tools, threading, time\nout = []\n"
                      "threading.Thread(target=lambda: out.append(hermes_tools.slow()), daemon=True).start()\n"
                      "time.sleep(0.05)")  # the call is sent while this cell runs; the cell ends first
    assert first.status == "ok"

    for i in range(5):
        r = k.execute(f"{i}, out", timeout=3.0)
        assert r.status == "ok", r.summary()  # a swallowed execute hung until its 3-s timeout's kill
        assert not r.kernel.state_lost and r.kernel.generation == 0
    assert r.value == "(4, [1])"  # the in-flight call got its own answer


def test_a_thread_calling_across_many_cells_gets_every_answer(make_kernel):
    k = make_kernel(tools={"add": lambda a, b: a + b}, watchdog=WatchdogPolicy(interrupt_grace=1.0, kill_grace=1.0))
    k.execute("import hermes_tools, threading\nstats = {'ok': 0, 'refused': 0}\n"
              "def hammer():\n    for i in range(300):\n        try:\n"
              "            assert hermes_tools.add(a=i, b=1) == i + 1\n            stats['ok'] += 1\n"
              "        except hermes_tools.ToolError:\n            stats['refused'] += 1\n"
              "t = threading.Thread(target=hammer, daemon=True)\nt.start()")

    for i in range(40):
        r = k.execute(f"{i} * 2", timeout=3.0)
        assert r.status == "ok" and r.value == str(i * 2), r.summary()
    r = k.execute("t.join(10)\nt.is_alive(), stats['ok'] + stats['refused']", timeout=15.0)
    assert r.value == "(False, 300)", r.summary()


def test_threads_of_one_cell_calling_at_once_each_get_their_own_answer_intact(make_kernel):
    """Answers of several megabytes, each read in many chunks: one thread reads the channel for
    all waiters and routes every frame whole (two readers at once would split a frame's chunks
    between them)."""
    k = make_kernel(tools={"blob": lambda i: f"{i}:" + str(i) * 1_500_000})
    r = k.execute("import hermes_tools, threading\nbarrier = threading.Barrier(6)\ngot = {}\n"
                  "def call(i):\n    barrier.wait()\n    got[i] = hermes_tools.blob(i=i)\n"
                  "ts = [threading.Thread(target=call, args=(i,)) for i in range(6)]\n"
                  "[t.start() for t in ts]; [t.join(30) for t in ts]\n"
                  "sorted(i for i, v in got.items() if v == f'{i}:' + str(i) * 1_500_000)", timeout=60)
    assert r.status == "ok", r.summary()
    assert r.value == "[0, 1, 2, 3, 4, 5]" and len(r.tool_calls) == 6
