"""Found by a fresh-install helper (2026-12-04): a kernel a test started and never shut down was
reported only as a leaked kernel dir and two leaked kernel processes whose command line is the
kernel server's (``... hermes-runner-....pyz server --fd 15``): it read as if the server had
leaked, and nothing said which kernel still ran. The report now leads with a line per kernel
whose runner or worker outlived the test; a helper a shut-down kernel's cell left behind gets
no such line (the kernel itself did end), also one the cell forked, which shows the worker's
command line (a second breaker helper found that false line).
"""

from __future__ import annotations

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.leaks.checker import LeakChecker
from pytest_hermes_kernel.transports.local import LocalTransport
from tests.support import kill_quietly


def test_a_kernel_left_running_is_named_and_a_helper_of_an_ended_kernel_is_not():
    checker = LeakChecker(grace=0.5)
    transport = LocalTransport()
    before = checker.before()
    forgotten, ended = start_kernel(transport), start_kernel(transport)
    helper = forked = 0
    try:
        forgotten.execute("x = 1")
        helper = int(ended.execute("import subprocess\nsubprocess.Popen(['sleep', '300'], start_new_session=True).pid").value)
        forked = int(ended.execute("import os, time\npid = os.fork()\n"
                                   "if pid == 0:\n    os.setsid(); time.sleep(300); os._exit(0)\n"
                                   "deadline = time.monotonic() + 10\n"  # in its own session before the shutdown
                                   "while os.getsid(pid) != pid and time.monotonic() < deadline:\n"
                                   "    time.sleep(0.01)\npid").value)
        ended.shutdown()

        text = checker.after(before).format("test_x")

        assert (f"  kernel {forgotten.kernel_id} still runs (its runner or worker outlived the test): shut it down"
                in text), text
        assert f"kernel {ended.kernel_id} still runs" not in text, text
        assert f"pid {helper} (kernel {ended.kernel_id}): sleep 300" in text, text  # still a leak of its own
        assert f"pid {forked} (kernel {ended.kernel_id}): " in text and "hermes-runner-" in text, text
    finally:
        forgotten.shutdown()
        kill_quietly([helper, forked])
        transport.close()
