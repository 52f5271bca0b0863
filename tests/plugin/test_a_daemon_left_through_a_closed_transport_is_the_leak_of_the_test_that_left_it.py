"""A daemon a test's cell left through a transport of the test's own is that test's leak.

Found by a helper (2026-12-07): a test on an ssh transport of its own (``hermes_transport_drop``
gives it one, so does any transport option when ``-p no:...module_transports`` is given) whose
cell started a ``start_new_session`` daemon passed clean, while the run's sshd container, kept
up by another process of the run (an xdist worker beside it), went on running the daemon. The
transport was closed at the test's teardown, and its last leak probe listed nothing: it had no
connection left, and said nothing of it. The next test that connected the run's shared ssh
transport got the daemon as its own leak (``--hermes-leak-check=error``: an error at a test that
left nothing). The last probe of a closed ssh transport now looks through a connection of its
own, straight to the host (not through the fault proxy, closed with it), and the leak cleanup
ends what it found the same way. The docker transport looked there already (its closed
transport still scans the run's container): its case guards that.

The sshd container may also stay for the test's kernel, kept for post-mortem
(``--hermes-keep-failed``): the run no longer shares it, and the private key went with the run's
share, so the last look connects with the record and key the transport had when it left it (a
first version of this fix could not, and warned that the check could not look).

Each inner run's conftest starts a process that keeps the run's host up (as an xdist worker with
the shared transport would), so the host outlives the test's own transport. Without one, the
sshd container goes with the test's transport, its daemon with it: nothing to report, and no
"could not look" either (the last case).
"""

from __future__ import annotations

import pytest

from tests.plugin.test_keep_failed_docker import failing
from tests.plugin.test_keep_failed_docker import kept_docker as kept_ssh  # noqa: F401 - a fixture
from tests.support import output_of

CONFTEST = """
import subprocess, sys
import pytest
from pytest_hermes_kernel.containers.sharing import current_run_id

KEEP = ("import sys\\n"
        "from pytest_hermes_kernel.containers.sharing import use_run_id\\n"
        "use_run_id(sys.argv[1])\\n"
        "from pytest_hermes_kernel.transports import make_transport\\n"
        "t = make_transport(sys.argv[2])\\n"
        "t.connection() if sys.argv[2] == 'ssh' else t.hosts.shared()\\n"
        "print('kept', flush=True)\\n"
        "sys.stdin.read()\\n"
        "t.close()\\n")


@pytest.fixture(scope="session", autouse=KEPT)
def another_process_of_the_run_keeps_the_host(request):
    name = request.config.getoption("hermes_transport")
    keeper = subprocess.Popen([sys.executable, "-c", KEEP, current_run_id(), name],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert keeper.stdout.readline() == b"kept\\n"
        yield
    finally:
        keeper.stdin.close()
        keeper.wait(60)
"""

SHARED_FIRST = """

def test_a_first_on_the_shared_transport(hermes_kernel):
    assert hermes_kernel.execute("1").status == "ok"
"""

SUITE = """
import pytest
FIRST

DAEMON = ("import subprocess, sys\\n"
          "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(301)'], start_new_session=True).pid")
DAEMONS = ("import os\\n"
           "def cmd(p):\\n"
           "    try:\\n"
           "        return open(f'/proc/{p}/cmdline', 'rb').read()\\n"
           "    except OSError:\\n"
           "        return b''\\n"
           "len([p for p in os.listdir('/proc') if p.isdigit() and b'time.sleep(301)' in cmd(p)])")


MARK
def test_own_transport_leaves_a_daemon(hermes_kernel):
    r = hermes_kernel.execute(DAEMON)
    assert r.status == "ok", r.summary()
    r = hermes_kernel.execute("1")  # (a drop's fault fires after cell 1: the test meets it)
    assert r.status == "ok", r.summary()


def test_next_on_the_shared_transport(hermes_kernel):
    r = hermes_kernel.execute(DAEMONS)
    assert r.status == "ok", r.summary()
    print("daemons left:", r.value)
"""

DROP = '@pytest.mark.hermes_transport_drop("latency", after_cell=1, duration=0.1)'
OWN = "@pytest.mark.hermes_kernel(server=False)"
NO_MODULE_TRANSPORTS = ("-p", "no:pytest_hermes_kernel.plugin.module_transports")


def _run(pytester, run, transport: str, mark: str, *more: str, kept: bool = True, first: str = ""):  # type: ignore[no-untyped-def]
    pytester.makeconftest(CONFTEST.replace("KEPT", str(kept)))
    pytester.makepyfile(test_daemon=SUITE.replace("MARK", mark).replace("FIRST", first))
    return run("-s", "-rA", "--hermes-leak-check=error", f"--hermes-transport={transport}", *more)


@pytest.mark.parametrize(("transport", "mark", "more", "first"), [
    ("ssh", DROP, (), ""),
    ("ssh", OWN, NO_MODULE_TRANSPORTS, ""),
    ("ssh", DROP, (), SHARED_FIRST),  # its last look borrows the shared transport's connection
    ("docker", OWN, NO_MODULE_TRANSPORTS, ""),
], ids=["ssh-transport-drop", "ssh-own-options", "ssh-after-the-shared-one-connected", "docker-own-options"])
def test_the_daemon_is_the_leak_of_the_test_that_left_it(pytester, run, transport: str, mark: str,  # type: ignore[no-untyped-def]
                                                         more: tuple[str, ...], first: str) -> None:
    result = _run(pytester, run, transport, mark, *more, first=first)

    out = output_of(result)
    result.assert_outcomes(passed=3 if first else 2, errors=1)
    assert f"ERROR test_daemon.py::test_own_transport_leaves_a_daemon[{transport}] - " in out, out[-4000:]
    assert "leaked remote kernel process: " in out and "time.sleep(301)" in out, out[-4000:]
    assert f"LeakError: test_daemon.py::test_next_on_the_shared_transport[{transport}]" not in out, out[-4000:]
    assert "daemons left: 0" in out, out[-4000:]  # ended by the check that reported it
    assert "HermesLeakCheckIncompleteWarning" not in out, out[-4000:]


def test_a_daemon_whose_sshd_went_with_the_transport_is_no_leak_and_no_blind_spot(pytester, run) -> None:  # type: ignore[no-untyped-def]
    result = _run(pytester, run, "ssh", DROP, kept=False)

    out = output_of(result)
    result.assert_outcomes(passed=2)
    assert "daemons left: 0" in out, out[-4000:]
    assert "HermesLeakCheckIncompleteWarning" not in out and "leaks found" not in out, out[-4000:]



def test_a_closed_transports_last_look_into_a_kept_kernels_sshd_container_is_no_blind_spot(pytester, run,  # type: ignore[no-untyped-def]
                                                                                          kept_ssh) -> None:
    """Its daemon is the kept kernel's (it carries the kernel's id, as the kernel's processes do): no leak."""
    pytester.makepyfile(test_keep=failing("spawn").replace(
        'assert False, "deliberate failure"',
        "hermes_kernel.execute(\"import subprocess, sys; subprocess.Popen([sys.executable, '-c', "
        "'import time; time.sleep(303)'], start_new_session=True)\")\n    assert False, 'deliberate failure'"))

    result = run("--hermes-transport=ssh", f"--hermes-run-id={kept_ssh.run_id}", "--hermes-keep-failed",
                 "--hermes-leak-check=error", *NO_MODULE_TRANSPORTS)

    out = output_of(result)
    result.assert_outcomes(failed=1)
    assert "kept for post-mortem: test_keep.py::test_fails[ssh]" in out, out[-4000:]
    assert "HermesLeakCheckIncompleteWarning" not in out and "leak checks incomplete" not in out, out[-4000:]
