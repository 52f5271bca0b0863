"""Bug: the leak check makes the test process a child subreaper for each test and puts that back
in the test's teardown hook; a test that ended the run (``pytest.exit``, a ``KeyboardInterrupt``:
Ctrl-C, or a SIGTERM the plugin turns into one) never reaches that hook, and the process stayed a
subreaper. For a run made in this process (``pytester.runpytest`` inline, how a plugin's own tests
run pytest) under an outer run without the leak check, every helper a later test of the outer run
backgrounded (``sh -c 'sleep 1 &'``) became pytest's own child once its shell ended, and a
``<defunct>`` zombie of pytest's when it ended: nothing reaps it. Now the test's window is closed
after its run protocol whatever ends it.
"""

from __future__ import annotations

import pytest

SUITE = """
import os
import subprocess
import time

import psutil
import pytest

pytest_plugins = ["pytester"]

INNER = '''
import pytest

def test_ends_the_run():
    {stop}
'''


def test_an_inner_run_that_is_stopped(pytester):
    pytester.makepyfile(test_inner=INNER.format(stop="{stop}"))
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "--hermes-leak-check=warn", no_reraise_ctrlc=True)


def test_a_backgrounded_helper_is_not_adopted():
    out = subprocess.run(["sh", "-c", "sleep 1 >/dev/null 2>&1 & echo $!"], capture_output=True, text=True,
                         check=True).stdout
    helper = psutil.Process(int(out))
    deadline = time.monotonic() + 10
    while helper.is_running() and helper.status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.05)
    zombies = [p.pid for p in psutil.Process().children() if p.status() == psutil.STATUS_ZOMBIE]
    for pid in zombies:
        os.waitpid(pid, 0)
    assert helper.pid not in zombies, "the backgrounded helper ended as a zombie child of pytest"
"""


@pytest.mark.parametrize("stop", ["pytest.exit('stop here')", "raise KeyboardInterrupt"])
def test_a_run_ended_by_a_test_puts_the_subreaper_flag_back(pytester: pytest.Pytester, run, stop: str) -> None:
    pytester.makepyfile(test_suite=SUITE.replace("{stop}", stop))
    result = run("--hermes-leak-check=off", "-p", "no:xdist")
    result.assert_outcomes(passed=2)
