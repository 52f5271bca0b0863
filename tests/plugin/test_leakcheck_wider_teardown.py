"""The leak check of a test whose teardown also ends wider-scoped fixtures (the last test of a
module, of a class, of a worker's session): the test's own leftovers are looked for before those
fixtures end, while the hosts they provide still answer; what the fixtures leave is looked for
after them, and is still that test's leak."""

from __future__ import annotations

import re

import pytest

from tests.plugin.test_leakcheck import GRACE

HOSTS = """
import pytest
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import close_transport, make_transport, register_transport

UP = set()  # the hosts up now
LEFT = {}  # what the far side still runs: identity -> description

class OnHost(Transport):
    '''A backend on a host that a wider fixture provides (a session's sshd container, a second
    docker engine): once the fixture ends it, the host no longer answers.'''
    name = "onhost"
    def launch(self, spec): raise NotImplementedError
    def kill(self, launched): raise NotImplementedError
    def alive(self, launched): raise NotImplementedError
    def leak_snapshot(self, host_pid):
        if "h" not in UP:
            raise ConnectionError("the host is gone")
        return {"remote kernel process": dict(LEFT)}
    def leak_cleanup(self, kind, identity):
        LEFT.pop(identity, None)
    def describe(self):
        return "onhost (host h)"

register_transport("onhost", OnHost)

@pytest.fixture(scope="{scope}")
def host():
    UP.add("h")
    yield "h"
    UP.discard("h")

def use_and_close(leave=None):
    transport = make_transport("onhost")
    if leave:
        LEFT[leave] = f"pid 71 (kernel {leave}) on h"  # started through it, never shut down
    close_transport(transport)

def test_first(host):
    use_and_close()

def test_leaves_a_kernel_on_the_host(host):
    use_and_close(leave="k-left")

def test_last(host, capsys):  # its teardown ends the host fixture
    print("captured")
    use_and_close()
"""


@pytest.mark.parametrize("scope", ["module", "session"])
def test_the_last_tests_transport_is_probed_before_its_host_fixture_ends(pytester, run, scope):
    """The last test's check ran after the session's fixtures ended: a transport the test closed
    was probed on a host already gone, and the run's last test on every worker got "not checked"
    (an error under ``-W error``; a two-engine test in CI, whose second engine a session fixture
    stops). Its own check runs with pytest's capture suspended (under capture fds 1 and 2 point
    at pytest's temp files: two "leaked fds" per test)."""
    pytester.makepyfile(test_hosts=HOSTS.replace("{scope}", scope))

    result = run(GRACE, "--hermes-leak-check=error", "-W", "error::pytest_hermes_kernel.errors.HermesLeakCheckIncompleteWarning")

    out = result.stdout.str()
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_leaves_a_kernel_on_the_host*",
                                 "*leaked remote kernel process: pid 71 (kernel k-left) on h"])
    assert "not checked" not in out and "leaked fd" not in out, out[-3000:]


LAST_IN_MODULE = """
import subprocess
import pytest

KEEP = []

@pytest.fixture(scope="module")
def forgetful():
    yield
    KEEP.append(subprocess.Popen(["sleep", "30"]))  # started by the fixture's teardown, never waited for

@pytest.fixture
def own_sleeper():
    yield
    KEEP.append(subprocess.Popen(["sleep", "31"]))  # started by a function-scoped fixture's teardown

def test_one(forgetful):
    pass

def test_two(forgetful, own_sleeper):  # its teardown ends `forgetful` too
    pass
"""


def test_what_a_wider_fixture_leaves_at_its_teardown_is_still_the_last_tests_leak(pytester, run):
    """The second look, after the wider fixtures ended: what their teardown left is reported once,
    on the test whose teardown ended them, beside what the test's own fixtures left."""
    pytester.makepyfile(test_last=LAST_IN_MODULE)

    result = run(GRACE)

    result.assert_outcomes(passed=2, warnings=2)
    out = result.stdout.str().partition("short test summary info")[0]
    result.stdout.fnmatch_lines(["*HermesLeakWarning: test_last.py::test_two: resources outlived*",
                                 "*leaked child process: pid *: sleep 31",
                                 "*HermesLeakWarning: test_last.py::test_two: resources outlived*",
                                 "*leaked child process: pid *: sleep 30"])
    assert out.count("sleep 30") == 1 and out.count("sleep 31") == 1, out[-3000:]
    assert "leaks found: child process=2" in result.stdout.str()


LAST_LEAKS = """
import subprocess
import pytest

KEEP = []

@pytest.fixture(scope="module")
def shared():
    yield

def test_first(shared):
    pass

def test_last(shared):  # its own check runs among the module's finalizers
    KEEP.append(subprocess.Popen(["sleep", "32"]))
"""


def test_the_last_tests_leak_error_shows_the_report_not_the_plugins_source(pytester, run):
    """The last test's own check raises inside pytest's teardown of its module: its error showed
    the source of the plugin's own teardown hook (``return (yield)``) above the report, where any
    other test's shows the report alone."""
    pytester.makepyfile(test_last=LAST_LEAKS)

    result = run(GRACE, "--hermes-leak-check=error")

    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_last*",
                                 "E *LeakError: test_last.py::test_last: resources outlived the test*",
                                 "*leaked child process: pid *: sleep 32"])
    out = result.stdout.str()
    assert "pytest_runtest_teardown" not in out and "(yield)" not in out, out[-3000:]


HOST_LOST_IN_THE_LAST_TEST = HOSTS.replace("{scope}", "module").split("def use_and_close")[0] + """
OPEN = []

def test_first(host):
    OPEN.append(make_transport("onhost"))  # live until the run ends

def test_last(host):
    from pytest_hermes_kernel.kernel.contract import note_activity

    UP.discard("h")  # the host stops answering during the test
    note_activity()  # (something done towards a kernel: the probe looks again)
"""


def test_a_part_the_last_tests_first_look_could_not_see_is_not_said_blind_before_the_test(pytester, run):
    """A host that stopped answering during the last test: its first look says so; the second
    look, which compares with the first, said the host had been "not checked ... (before the
    test)", when it had answered then."""
    pytester.makepyfile(test_lost=HOST_LOST_IN_THE_LAST_TEST)

    result = run(GRACE)

    result.assert_outcomes(passed=2, warnings=1)  # the second look, blind there too, says the same
    result.stdout.fnmatch_lines(["*HermesLeakCheckIncompleteWarning: test_lost.py::test_last: *",
                                 "*not checked: onhost (host h): ConnectionError: the host is gone"])
    out = result.stdout.str()
    assert "before the test" not in out, out[-3000:]
    assert "leak checks incomplete: 1 tests (test_lost.py::test_last)" in out


TRANSPORT_FIXTURE_ON_A_HOST_FIXTURE = HOSTS.replace("{scope}", "session").split("def use_and_close")[0] + """
from pytest_hermes_kernel.kernel.contract import note_activity

@pytest.fixture(scope="session")
def transport(host):  # torn down before the host it depends on
    transport = make_transport("onhost")
    yield transport
    if {leave!r}:
        LEFT[{leave!r}] = f"pid 72 (kernel {leave}) on h"  # what its teardown left on the host
    note_activity()  # (closing it is done towards a kernel: the probe looks again)
    close_transport(transport)

def test_first(transport):
    pass

def test_last(transport):
    pass
"""


@pytest.mark.parametrize("leave", ["", "k-left"])
def test_a_transport_a_wider_fixture_closes_is_probed_before_its_host_fixture_ends(pytester, run, leave):
    """A session fixture closes a transport on a host another session fixture provides (a
    second docker engine's, an sshd container's): the closed transport is probed once more, and
    that was after the host fixture had ended the host ("not checked" on every worker's last
    test). It is looked at once the fixture that closed it has ended, while its host stands."""
    pytester.makepyfile(test_hosts=TRANSPORT_FIXTURE_ON_A_HOST_FIXTURE.replace("{leave!r}", repr(leave))
                        .replace("{leave}", leave))

    result = run(GRACE, "-W", "error::pytest_hermes_kernel.errors.HermesLeakCheckIncompleteWarning")

    out = result.stdout.str()
    assert "not checked" not in out, out[-3000:]
    if not leave:
        result.assert_outcomes(passed=2)
        return
    result.assert_outcomes(passed=2, warnings=1)
    result.stdout.fnmatch_lines(["*HermesLeakWarning: test_hosts.py::test_last: resources outlived*",
                                 "*leaked remote kernel process: pid 72 (kernel k-left) on h"])
    assert "leaks found: remote kernel process=1" in out


LEAVES_AS_IT_CLOSES = """
import pytest
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import close_transport, make_transport, register_transport

LEFT = {}

class OnHost(Transport):
    name = "onhost"
    def launch(self, spec): raise NotImplementedError
    def kill(self, launched): raise NotImplementedError
    def alive(self, launched): raise NotImplementedError
    def leak_snapshot(self, host_pid):
        return {"remote kernel process": dict(LEFT)}
    def leak_cleanup(self, kind, identity):
        LEFT.pop(identity, None)
    def describe(self):
        return "onhost (host h)"

register_transport("onhost", OnHost)

@pytest.fixture(scope="module")
def closes_late():
    transport = make_transport("onhost")
    yield
    LEFT["k-left"] = "pid 73 (kernel k-left) on h"  # left on the host as the fixture ends
    close_transport(transport)

def test_last(closes_late):
    pass
"""


def test_a_timeout_in_the_look_between_wider_teardowns_is_not_lost(pytester, run):
    """pytest-timeout's alarm lands in the grace of the look taken as a wider fixture closed a
    transport (the leak there keeps it re-checking): the test fails with the timeout. Before, the
    look kept the timeout on the checker and the test's own check cleared it unraised: "1 passed,
    1 warning" (the leak, as a warning) with pytest-timeout's stack dump above it."""
    pytest.importorskip("pytest_timeout", reason="needs pytest-timeout (the dev extra)")
    pytester.makepyfile(test_late=LEAVES_AS_IT_CLOSES)

    result = run("--hermes-leak-grace=5", "--hermes-leak-check=warn", "--timeout=1", "-o", "timeout_method=signal")

    out = result.stdout.str()
    result.assert_outcomes(passed=1, errors=1, warnings=1)
    # pytest-timeout 2.4's words; 2.1 to 2.3 (the dev extra allows 2.1) say "Failed: Timeout >1.0s"
    assert re.search(r"Timeout \(>1\.0s\) from pytest-timeout|Failed: Timeout >1\.0s$", out, re.M), out[-3000:]
    result.stdout.fnmatch_lines(["*leaked remote kernel process: pid 73 (kernel k-left) on h"])
