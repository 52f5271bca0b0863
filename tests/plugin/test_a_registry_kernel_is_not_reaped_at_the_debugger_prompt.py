"""A user at pytest's debugger prompt keeps the kernel the test failed with, ``hermes_registry``'s too.

``--pdb`` stops at the failed assert; the user looks at the kernel's state from the prompt. A
``hermes_registry``'s idle reaper went on counting meanwhile, and once ``--hermes-idle-timeout``
had passed it reaped the kernel under the prompt: ``p hermes_registry.execute(key, "x").value``
printed ``None`` (a ``NameError`` on a fresh kernel: the state the test failed on was gone) and
the summary said ``idle_reaped=1``. The registry's idle clock now stands still while pytest's
debugger prompt is open (``pytest_enter_pdb`` until ``pytest_leave_pdb``, or the test's end).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.pty_run import PtyRun
from tests.support import gone, own_run_id, run_leftovers, stays_true

IDLE_TIMEOUT_S = 1.0

TEST = """
from pytest_hermes_kernel import KernelKey

def test_registry_state(hermes_registry):
    key = KernelKey(owner="agent")
    pid = hermes_registry.execute(key, "import os; x = 41; os.getpid()").value
    print(f"WORKER={pid}=")
    assert hermes_registry.execute(key, "x + 1").value == "41"
"""


@pytest.mark.parametrize("way", ["pdb", "breakpoint"])
def test_the_registrys_kernel_outlives_its_idle_timeout_at_the_prompt(pytester: pytest.Pytester, way: str) -> None:
    test = TEST if way == "pdb" else TEST.replace('    assert', '    breakpoint()\n    assert')
    pytester.makepyfile(test_at_prompt=test)
    run_id, own = own_run_id([])
    debug = ["--pdb"] if way == "pdb" else []
    run = PtyRun(["-p", "no:cacheprovider", "-p", "no:randomly", "-s", *own, *debug, "--hermes-transport=local",
                  f"--hermes-idle-timeout={IDLE_TIMEOUT_S}"], pytester.path)
    try:
        worker = int(run.expect(r"WORKER=(\d+)=", 60).group(1))
        run.expect(r"\(Pdb\) ", 30)
        # at the prompt for three idle timeouts: the old reaper ended the worker after one
        assert stays_true(lambda: not gone(worker), 3 * IDLE_TIMEOUT_S), \
            f"the registry's kernel (worker {worker}) was reaped while the prompt was open:\n{run.text[-2000:]}"
        mark = run.send('p hermes_registry.execute(key, "x").value')
        run.expect(r"\(Pdb\) ", 30, after=mark)
        assert "'41'" in run.text[mark:], run.text[mark:]
        mark = run.send("c")
        status = run.wait(60)
    finally:
        run.kill()
    tail = run.text[mark:]
    assert status == 1 and re.search(r"1 failed", tail), tail
    assert "idle_reaped" not in tail, tail
    assert gone(worker)
    assert not run_leftovers(run_id)


def test_the_clock_stands_still_while_the_prompt_is_open() -> None:
    from pytest_hermes_kernel.plugin.prompt import PromptClock

    ticks = iter([10.0, 50.0, 60.0, 70.0, 80.0])
    clock = PromptClock(lambda: next(ticks))
    clock.enter()                # at 10
    clock.enter()                # (a second breakpoint() before a `c`: still one prompt)
    assert clock() == 10.0       # whenever it is asked while the prompt is open
    clock.leave()                # at 50: the 40 s at the prompt do not count
    assert clock() == 20.0       # at 60
    clock.leave()                # (a second leave changes nothing)
    assert clock() == 30.0       # at 70
