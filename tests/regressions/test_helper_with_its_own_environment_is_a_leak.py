"""Found by the breaker session: a process a cell started in a session of its own *and* with an
environment of its own (``Popen(..., start_new_session=True, env={...})``, as a daemon that cleans
its environment does) outlived its kernel unseen. It carries no kernel marker, and once its kernel's
processes ended it was a child of init, not of the test process: the leak check passed while
``sleep`` ran on for 300 s after the session. The local kernel server is a child subreaper now:
such a process becomes the server's, a descendant of the test process, and is reported (and
ended) as a ``child process``. The spawn path (``server=False``) and remote kernels are not covered.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import gone, kill_quietly, wait_until

START_HELPER = ("import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True, "
                "env={'PATH': '/usr/bin:/bin'}).pid")


@pytest.mark.parametrize("end", ["shutdown", "restart"])
def test_a_helper_with_its_own_environment_is_reported(end):
    checker = LeakChecker(grace=0.5)
    transport = LocalTransport()  # its own kernel server, ended with it
    before = checker.before()
    kernel = start_kernel(transport)
    helper = 0
    try:
        helper = int(kernel.execute(START_HELPER).value)
        if end == "restart":
            kernel.restart()
        kernel.shutdown()
        report = checker.after(before)
        found = [desc for items in report.leaks.values() for desc in items.values()]
        assert any(desc.startswith(f"pid {helper}: sleep 300") for desc in found), report.format("it")
        checker.cleanup(report)
        wait_until(lambda: gone(helper), 5.0, what="the check to end the helper it reported")
    finally:
        kernel.shutdown()
        kill_quietly([helper])
        transport.close()
