"""The leak checker: what it reports after a test, how --hermes-leak-check, -W error,
hermes_allow_leaks and -p no:... change that, and that it cleans up what it reports."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support import gone, kill_quietly, pid_in, wait_until

LEAKY_TESTS = """
import subprocess
import threading

from pytest_hermes_kernel import start_kernel

KERNELS = []  # keeps the handle alive, as a module-level or cached kernel would

def test_clean(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"

def test_stray_subprocess():
    subprocess.Popen(["sleep", "30"])

def test_unreleased_kernel():
    KERNELS.append(start_kernel("local"))  # never shut down

def test_stray_thread():
    threading.Thread(target=threading.Event().wait, args=(30,), name="stray-worker", daemon=True).start()
"""

ONE_LEAK = """
import subprocess
import pytest

def test_stray_subprocess():
    subprocess.Popen(["sleep", "30"])

@pytest.mark.hermes_allow_leaks("the sleeper is this test's point")
def test_allowed():
    subprocess.Popen(["sleep", "30"])
"""


@pytest.fixture
def inner_sleepers_ended() -> Iterator[None]:
    """Ends the ``sleep 30`` that ONE_LEAK's inner run leaves to no check (``hermes_allow_leaks``,
    or the check off): once the inner pytest exited, this test process adopted them (its own leak
    check makes it a child subreaper during the test), and they outlived this test: its leak."""
    yield
    for proc in psutil.Process().children():
        with contextlib.suppress(psutil.Error):
            if proc.cmdline() == ["sleep", "30"]:
                kill_quietly([proc.pid])


def _reports(out: str) -> str:
    """The run's output before its short test summary (which repeats each error's message whole
    where pytest sees a CI environment, ``CI=true``, and cuts it to the terminal's width elsewhere)."""
    return out.partition("short test summary info")[0]


GRACE = "--hermes-leak-grace=0.5"  # a leak is reported after this many seconds of re-checking


def test_reports_each_kind_of_leak_and_stays_quiet_on_a_clean_test(pytester, run):
    pytester.makepyfile(test_leaky=LEAKY_TESTS)

    result = run(GRACE)

    result.assert_outcomes(passed=4, warnings=3)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*/test_leaky.py:11: HermesLeakWarning: test_leaky.py::test_stray_subprocess: resources outlived the test*",
        "*leaked child process: pid *: sleep 30",
        "*/test_leaky.py:14: HermesLeakWarning: test_leaky.py::test_unreleased_kernel: resources outlived the test*",
        "*leaked kernel process: pid * (kernel *): *hermes-runner-*.pyz serve*",
        "*HermesLeakWarning: test_leaky.py::test_stray_thread: resources outlived the test*",
        "*leaked thread: thread 'stray-worker' (daemon=True)",
        "*Hint: shut kernels down*hermes_allow_leaks(reason)*",
        "leaks found: child process=1, kernel dir=1, kernel process=2, thread=1",
    ])
    assert "test_clean" not in out.split("warnings summary")[1]  # no warning names the clean test
    assert "leakcheck.py" not in out, out  # each warning is at its test's line, not the kit's (a user read it as a kit bug)
    sleeper = pid_in(out, r"leaked child process: pid (\d+): sleep 30")
    runner = pid_in(out, r"leaked kernel process: pid (\d+) \(kernel [0-9a-f]{32}\):")
    wait_until(lambda: gone(sleeper) and gone(runner), 5.0, what="the checker to end what it reported")


@pytest.mark.usefixtures("inner_sleepers_ended")
def test_warning_filter_error_makes_a_leak_fail_the_test(pytester, run):
    pytester.makepyfile(test_one=ONE_LEAK)

    result = run(GRACE, "-W", "error::pytest_hermes_kernel.errors.HermesLeakWarning")

    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_stray_subprocess*",
        "E *pytest_hermes_kernel.errors.HermesLeakWarning: test_one.py::test_stray_subprocess: resources outlived*",
    ])
    assert "test_allowed: resources outlived" not in result.stdout.str()  # hermes_allow_leaks(reason) suppresses


@pytest.mark.usefixtures("inner_sleepers_ended")
def test_leak_check_error_mode_errors_the_test(pytester, run):
    pytester.makepyfile(test_one=ONE_LEAK)

    result = run(GRACE, "--hermes-leak-check=error")

    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([
        "hermes-kernel: * leak-check=error *",
        "*ERROR at teardown of test_stray_subprocess*",
        "E *pytest_hermes_kernel.errors.LeakError: test_one.py::test_stray_subprocess: resources outlived*",
        "*leaked child process: pid *: sleep 30",
        "leaks found: child process=1",
    ])


ALLOWED_HELPER = """
import pytest

@pytest.mark.hermes_allow_leaks("the helper is this test's point")
def test_allowed(hermes_kernel):
    code = "import subprocess; subprocess.Popen(['sleep', '304'], start_new_session=True).pid"
    open("helper.pid", "w").write(hermes_kernel.execute(code).value)

def test_next(hermes_kernel):
    assert hermes_kernel.execute("1").value == "1"
"""


def test_allow_leaks_neither_reports_nor_ends_what_the_test_left(pytester, run):
    """What README's marker table and docs/checks.md say: the marked test's leftovers are not
    reported, not ended (they outlive the run), not reported by a later test's check either, and
    ``hermes-kernel sweep`` (kind kernel-processes) is what removes a kernel's helper then."""
    pytester.makepyfile(test_allowed=ALLOWED_HELPER)

    result = run(GRACE, "--hermes-leak-check=error")

    helper = int((pytester.path / "helper.pid").read_text())
    try:
        result.assert_outcomes(passed=2)
        assert "leaked" not in result.stdout.str() and "leaks found" not in result.stdout.str()
        assert not gone(helper), "the helper was ended: the docs say hermes_allow_leaks leaves it"
        swept = subprocess.run([str(Path(sys.executable).parent / "hermes-kernel"), "sweep", "--dry-run",
                                "kernel-processes"], capture_output=True, text=True, timeout=60, check=False)
        assert f"would kill kernel process {helper} " in swept.stdout, swept.stdout + swept.stderr
    finally:
        kill_quietly([helper])
    wait_until(lambda: gone(helper), 5.0, what="the helper to end")


@pytest.mark.usefixtures("inner_sleepers_ended")
@pytest.mark.parametrize("how", [["--hermes-leak-check=off"], ["-p", "no:pytest_hermes_kernel.plugin.leakcheck"]],
                         ids=["leak-check-off", "plugin-disabled"])
def test_checker_can_be_turned_off(pytester, run, how):
    pytester.makepyfile(test_one=ONE_LEAK)

    result = run(GRACE, "--strict-markers", *how)  # hermes_allow_leaks stays a known marker

    result.assert_outcomes(passed=2)
    assert "leaked" not in result.stdout.str() and "HermesLeakWarning" not in result.stdout.str()


def test_allow_leaks_without_a_reason_errors_at_setup_naming_the_test(pytester, run):
    """Checked before the test runs, like every marker (it was a UsageError at teardown, after
    the test had run and maybe leaked what the marker was meant to excuse)."""
    pytester.makepyfile("""
        import pathlib
        import pytest

        @pytest.mark.hermes_allow_leaks
        def test_no_reason():
            pathlib.Path("ran").touch()

        @pytest.mark.hermes_allow_leaks(reason="")
        def test_empty_reason():
            pathlib.Path("ran").touch()

        @pytest.mark.hermes_allow_leaks("  ")
        def test_blank_reason():
            pathlib.Path("ran").touch()

        @pytest.mark.hermes_allow_leaks(123)
        def test_number_reason():
            pathlib.Path("ran").touch()
    """)
    result = run()
    result.assert_outcomes(errors=4)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_no_reason*",
        "*test_no_reason: @pytest.mark.hermes_allow_leaks needs a reason*",
        "*ERROR at setup of test_empty_reason*",
        "*ERROR at setup of test_blank_reason*",
        "*ERROR at setup of test_number_reason*",
        "*test_number_reason: @pytest.mark.hermes_allow_leaks needs a reason*not 123*",
    ])
    assert not (pytester.path / "ran").exists(), "a marker problem must stop the test before it runs"


OWN_TRANSPORTS = """
import pytest
from pytest_hermes_kernel.transports import live_transports

@pytest.mark.parametrize("i", range(5))
@pytest.mark.hermes_kernel(server=False)
def test_own_transport(hermes_kernel, i):
    assert hermes_kernel.execute("1").value == "1"

def test_zz_count():
    print("LIVE", len(live_transports()))
"""


def test_a_tests_own_transport_is_probed_after_it_and_then_no_more(pytester, run):
    """Each test whose marker gives transport options gets its own transport, closed after it.
    The leak check after that test still probes it; later ones must not, or every snapshot grows
    with the run (it did: 7-9 s setups and teardowns late in the full matrix)."""
    pytester.makepyfile(test_own=OWN_TRANSPORTS)
    result = run("--hermes-transport=local", "--hermes-leak-check=error", "-s")
    result.assert_outcomes(passed=6)
    live = [int(n) for n in re.findall(r"LIVE (\d+)", result.stdout.str())]
    assert live and live[0] <= 1, result.stdout.str()[-2000:]  # at most the shared local transport


SILENT_HOST = """
import pytest
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import make_transport, register_transport

class Silent(Transport):
    name = "silent"
    silent = False
    def launch(self, spec): raise NotImplementedError
    def kill(self, launched): raise NotImplementedError
    def alive(self, launched): raise NotImplementedError
    def leak_snapshot(self, host_pid):
        if self.silent:
            raise TimeoutError("the host did not answer in 10 s")
        return {}
    def describe(self):
        return "silent (host 10.9.9.9)"
    def set_silent(self, silent):  # a call of the transport's: the check looks again after it
        self.silent = silent

register_transport("silent", Silent)
HOST = make_transport("silent")

def test_the_host_goes_silent():
    HOST.set_silent(True)

def test_it_answers_again():  # silent when this test began: its "before" saw nothing there
    HOST.set_silent(False)

def test_checked_again():
    HOST.set_silent(False)
"""


def test_a_host_the_check_cannot_reach_is_reported_unchecked_never_clean(pytester, run):
    pytester.makepyfile(test_silent=SILENT_HOST)

    result = run(GRACE)

    result.assert_outcomes(passed=3, warnings=2)
    result.stdout.fnmatch_lines([
        "*HermesLeakCheckIncompleteWarning: test_silent.py::test_the_host_goes_silent: the leak check could not "
        "look at everything; a leak there went unseen:",
        "*not checked: silent (host 10.9.9.9): TimeoutError: the host did not answer in 10 s",
        "*HermesLeakCheckIncompleteWarning: test_silent.py::test_it_answers_again: the leak check could not*",
        "*not checked: silent (host 10.9.9.9) (before the test): TimeoutError: *",
        "leak checks incomplete: 2 tests (test_silent.py::test_the_host_goes_silent, "
        "test_silent.py::test_it_answers_again): a part could not be looked at;*",
    ])
    assert "test_checked_again: the leak check" not in result.stdout.str()  # it looked again and saw

    strict = run(GRACE, "-W", "error::pytest_hermes_kernel.errors.HermesLeakCheckIncompleteWarning")

    strict.assert_outcomes(passed=3, errors=2)
    strict.stdout.fnmatch_lines(["*ERROR at teardown of test_the_host_goes_silent*"])


def test_a_leak_beside_a_part_not_checked_is_still_reported_and_ended_whatever_fails_first(pytester, run):
    """``-W error`` on the incomplete-check warning must not hide a leak the same check found."""
    pytester.makepyfile(test_silent=SILENT_HOST.split("def test_the_host_goes_silent")[0] + """
import subprocess

def test_silent_and_leaky():
    HOST.set_silent(True)
    subprocess.Popen(["sleep", "30"])
""")

    result = run(GRACE, "-W", "error::pytest_hermes_kernel.errors.HermesLeakCheckIncompleteWarning")

    result.assert_outcomes(passed=1, errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*HermesLeakWarning: test_silent.py::test_silent_and_leaky: resources outlived*",
                                 "*leaked child process: pid *: sleep 30",
                                 "*not checked: silent (host 10.9.9.9): TimeoutError: *",
                                 "leaks found: child process=1",
                                 "leak checks incomplete: 1 tests (test_silent.py::test_silent_and_leaky)*"])
    sleeper = pid_in(out, r"leaked child process: pid (\d+): sleep 30")
    wait_until(lambda: gone(sleeper), 5.0, what="the checker to end the leaked sleeper")


IN_A_PYTESTER_TEST = """
from pytest_hermes_kernel import KernelKey, KernelRegistry

KEEP = []

def test_leaks_from_a_test_that_uses_pytester(pytester):
    registry = KernelRegistry()  # the first use of the registry and the local transport here
    registry.execute(KernelKey(owner="a"), "1")
    KEEP.append(registry)
"""


def test_a_leak_in_a_test_that_uses_pytester_is_still_found(pytester, run):
    """``pytester`` drops the modules first imported during its test at teardown (most of the
    package loads on first use): the leak check must still see that test's registry and kernel dir."""
    pytester.makepyfile(test_in_pytester=IN_A_PYTESTER_TEST)

    result = run(GRACE, "-p", "pytester")

    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*leaked kernel dir: *hermes-kernel-*", "*leaked registry entry: registry entry 'a'*"],
                                consecutive=False)


MODULE_KERNEL = """
import subprocess
import pytest
from pytest_hermes_kernel import start_kernel

@pytest.fixture(scope="module")
def shared():
    with start_kernel("local") as k:
        yield k

@pytest.fixture(scope="module")
def forgetful():
    return start_kernel("local")  # never shut down: a leak of the module's fixture

def test_one(shared):
    assert shared.execute("x = 1; x").value == "1"

def test_two(shared):
    result = shared.execute("x")
    assert (result.status, result.value, result.kernel.state_lost) == ("ok", "1", False)

def test_three(shared, forgetful):
    assert forgetful.execute("2").value == "2"

def test_four(forgetful):
    assert forgetful.execute("3").value == "3"
"""


def test_a_wider_fixtures_kernel_is_not_a_leak_of_the_test_that_started_it_nor_ended(pytester, run):
    """A module-scoped fixture's kernel outlives the first test by design: the check after that
    test must neither report it nor end it (it did both, and the next test's cell found the
    kernel dead). What such a fixture leaves when it is torn down is still a leak, of the test
    whose teardown ended the fixture."""
    pytester.makepyfile(test_module_kernel=MODULE_KERNEL)

    result = run(GRACE, "--hermes-leak-check=error")

    result.assert_outcomes(passed=4, errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_four*",
                                 "E *LeakError: test_module_kernel.py::test_four: resources outlived*",
                                 "*leaked kernel process: pid *"])
    assert _reports(out).count("resources outlived") == 1, out[-3000:]
    runner = pid_in(out, r"leaked kernel process: pid (\d+) \(kernel [0-9a-f]{32}\):")
    wait_until(lambda: gone(runner), 5.0, what="the checker to end the forgotten module kernel")


HELD_KERNELS = """
import pytest
from pytest_hermes_kernel import KernelKey, KernelRegistry, start_kernel

T = "{transport}"

@pytest.fixture(scope="session")
def registry():
    with KernelRegistry() as reg:  # its kernels start later, in the tests that use them
        yield reg

@pytest.fixture(scope="session")
def forgetful_registry():
    return KernelRegistry()  # never closed: what it starts outlives the fixture

@pytest.fixture(scope="module")
def shared():
    with start_kernel(T) as k:
        yield k

def test_one(registry):
    assert registry.execute(KernelKey(owner="agent", transport=T), "x = 41").status == "ok"

def test_two(registry, shared):
    result = registry.execute(KernelKey(owner="agent", transport=T), "x + 1")
    assert (result.status, result.value, result.kernel.state_lost) == ("ok", "42", False), result.summary()
    shared.restart()  # a new worker, still the module fixture's
    assert shared.execute("y = 1; y").value == "1"

def test_three(shared, forgetful_registry):
    result = shared.execute("y")
    assert (result.status, result.value) == ("ok", "1"), result.summary()
    assert forgetful_registry.execute(KernelKey(owner="late", transport=T), "2").value == "2"

def test_four():  # the last test: its teardown ends the session's fixtures
    pass
"""


@pytest.mark.parametrize("transport", ["local", "docker", "ssh"])
def test_kernels_a_wider_fixtures_registry_or_kernel_starts_later_are_its_own(pytester, run, transport, request):
    """A session-scoped registry starts its kernels in the tests that first use them, and a
    module-scoped kernel restarted by a test has a new worker: both are the fixture's, not leaks
    of those tests (the check ended the registry's kernel after its first test, and the next test's
    cell found it dead). A registry fixture that never closes still leaks, at the session's end."""
    if transport != "local":
        request.getfixturevalue("docker_ready")
    pytester.makepyfile(test_held=HELD_KERNELS.replace("{transport}", transport))

    result = run(GRACE, "--hermes-leak-check=error", "-p", "no:randomly")

    result.assert_outcomes(passed=4, errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_four*",
                                 "E *LeakError: test_held.py::test_four: resources outlived*"], consecutive=False)
    assert _reports(out).count("resources outlived") == 1, out[-3000:]
    assert "leaked registry entry: registry entry 'late'" in out, out[-3000:]
    assert "registry entry 'agent'" not in out, out[-3000:]
    if transport == "local":
        runner = pid_in(out, r"leaked kernel process: pid (\d+) \(kernel [0-9a-f]{32}\):")
        wait_until(lambda: gone(runner), 5.0, what="the checker to end the forgotten registry's kernel")
    else:
        result.stdout.fnmatch_lines(["*leaked remote kernel process: pid * (kernel *"], consecutive=False)


FAILING_TEARDOWN = """
import subprocess
import pytest

@pytest.fixture
def sleeper():
    proc = subprocess.Popen(["sleep", "30"])
    yield proc
    raise RuntimeError("teardown went wrong before it waited for the sleeper")

def test_leaves_a_sleeper(sleeper):
    pass

def test_next():
    pass
"""


@pytest.mark.parametrize("mode", ["warn", "error"])
def test_a_fixture_teardown_that_raises_does_not_hide_what_it_left(pytester, run, mode):
    """A teardown error skipped the check: the sleeper was never reported nor ended, and since
    it was in every later test's "before", no later check saw it either."""
    pytester.makepyfile(test_teardown=FAILING_TEARDOWN)

    result = run(GRACE, f"--hermes-leak-check={mode}")

    result.assert_outcomes(passed=2, errors=1, **({"warnings": 1} if mode == "warn" else {}))
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*RuntimeError: teardown went wrong*"], consecutive=False)
    result.stdout.fnmatch_lines(["*test_teardown.py::test_leaves_a_sleeper: resources outlived the test*",
                                 "*leaked child process: pid *: sleep 30"], consecutive=False)
    result.stdout.fnmatch_lines(["leaks found: child process=1"], consecutive=False)
    sleeper = pid_in(out, r"leaked child process: pid (\d+): sleep 30")
    wait_until(lambda: gone(sleeper), 5.0, what="the checker to end the sleeper")


CLOSED_HOST = """
import gc
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import close_transport, make_transport, register_transport

LEFT = {}  # what the far side still runs: identity -> description
KEEP = []

class FarHost(Transport):
    '''A user backend whose close() leaves its kernels running on its host (they end by their own timer).'''
    name = "farhost"
    probed = 0
    def launch(self, spec): raise NotImplementedError
    def kill(self, launched): raise NotImplementedError
    def alive(self, launched): raise NotImplementedError
    def leak_snapshot(self, host_pid):
        FarHost.probed += 1
        return {"remote kernel process": dict(LEFT)}
    def leak_cleanup(self, kind, identity):
        LEFT.pop(identity, None)
    def describe(self):
        return "farhost (host 10.9.9.7)"

register_transport("farhost", FarHost)

def use_and_close(name, keep):
    transport = make_transport("farhost")
    LEFT[name] = f"pid 70 (kernel {name}) on 10.9.9.7"  # started through it, never shut down
    close_transport(transport)
    if keep:
        KEEP.append(transport)  # a handle of the test still refers to it

def test_closes_and_drops_its_transport():
    use_and_close("k-dropped", keep=False)
    gc.collect()

def test_closes_its_transport_a_handle_still_refers_to():
    use_and_close("k-referred", keep=True)

def test_later():
    assert LEFT == {}, "the check ended what it reported"
    FarHost.probed = 0

def test_much_later():
    assert FarHost.probed == 0, "a closed host found clean is probed no more"
"""


def test_a_leak_on_a_transport_the_test_closed_is_reported_and_ended(pytester, run):
    """The check after a test probes the transports the test closed once more, for what they left
    on their host. A closed transport nothing referenced any more was garbage before that probe,
    and one that was probed had been forgotten by the check's own re-check (``--hermes-leak-grace``),
    so its leak vanished on the second look: either way, a clean pass."""
    pytester.makepyfile(test_closed=CLOSED_HOST)

    result = run(GRACE)

    result.assert_outcomes(passed=4, warnings=2)
    result.stdout.fnmatch_lines([
        "*HermesLeakWarning: test_closed.py::test_closes_and_drops_its_transport: resources outlived*",
        "*leaked remote kernel process: pid 70 (kernel k-dropped) on 10.9.9.7",
        "*HermesLeakWarning: test_closed.py::test_closes_its_transport_a_handle_still_refers_to: resources*",
        "*leaked remote kernel process: pid 70 (kernel k-referred) on 10.9.9.7",
        "leaks found: remote kernel process=2",
    ])


MODULE_KERNEL_RESTARTED = """
import pytest
from pytest_hermes_kernel import start_kernel

@pytest.fixture(scope="module")
def shared():
    with start_kernel("local") as k:
        yield k

def test_one(shared):
    assert shared.execute("x = 1; x").value == "1"

def test_two_restarts_it(shared):
    assert shared.execute("import sys; sys.exit(3)").status == "exited"  # the next cell: a fresh worker
    assert shared.execute("y = 2; y").value == "2"

def test_three(shared):
    result = shared.execute("y")
    assert (result.status, result.value) == ("ok", "2"), result.summary()
"""


def test_a_wider_fixtures_kernel_restarted_during_a_test_is_still_its_own(pytester, run):
    """The module's kernel restarted in a test (SystemExit, a crash, restart()): its new worker is
    the fixture's kernel still, not that test's leak (it was reported and killed, and the next
    test's cell found the namespace gone)."""
    pytester.makepyfile(test_restarted=MODULE_KERNEL_RESTARTED)

    result = run(GRACE, "--hermes-leak-check=error")

    result.assert_outcomes(passed=3)


CLOSED_WITHOUT_ACTIVITY = """
from pytest_hermes_kernel.kernel.contract import Transport
from pytest_hermes_kernel.transports import close_transport, make_transport, register_transport

LEFT = {}

class Plain(Transport):
    '''A user backend that keeps the base class's close() (no method of its own is called below).'''
    name = "plain"
    def launch(self, spec): raise NotImplementedError
    def kill(self, launched): raise NotImplementedError
    def alive(self, launched): raise NotImplementedError
    def leak_snapshot(self, host_pid):
        return {"remote kernel process": dict(LEFT)}
    def leak_cleanup(self, kind, identity):
        LEFT.pop(identity, None)

register_transport("plain", Plain)
HOST = make_transport("plain")  # made before the tests: each test's "before" probed it

def test_closes_what_it_used():
    LEFT["k"] = "pid 72 (kernel k) on 10.9.9.8"  # a kernel its close left running there
    close_transport(HOST)
"""


def test_a_transport_closed_with_nothing_else_done_is_probed_again_not_read_from_the_last_look(pytester, run):
    """The leak probe reuses its last snapshot for a moment while nothing was done towards a
    kernel; closing a transport whose class keeps the base ``close()`` counted as nothing, so the
    check after the test read the snapshot taken before it and missed what the close left."""
    pytester.makepyfile(test_plain=CLOSED_WITHOUT_ACTIVITY)

    result = run(GRACE)

    result.assert_outcomes(passed=1, warnings=1)
    result.stdout.fnmatch_lines(["*HermesLeakWarning: test_plain.py::test_closes_what_it_used: resources outlived*",
                                 "*leaked remote kernel process: pid 72 (kernel k) on 10.9.9.8"])


def test_a_child_a_leaked_helper_forks_while_a_wider_fixture_is_set_up_is_the_tests_leak(pytester, run):
    """A function fixture leaves a helper running; it forks a child while the session fixture the
    test asks for next is set up. That child is the helper's, the test's leak: reported and ended
    with the helper. Taken for the session fixture's own (new during its setup), it was neither:
    it outlived the check that ended the helper, and the run."""
    tag = f"held-{uuid.uuid4().hex[:10]}"
    fifo = pytester.path / "go"
    pytester.makeconftest(f"""
import os, subprocess, time
import psutil
import pytest

@pytest.fixture
def helper(request):
    os.mkfifo({str(fifo)!r})
    subprocess.Popen(["sh", "-c", "read _ < {fifo}; sh -c 'sleep 300; : {tag}-child'; : {tag}"])
    request.getfixturevalue("shared")  # (a session fixture the test asks for is set up before its function fixtures)
    yield

@pytest.fixture(scope="session")
def shared():
    with open({str(fifo)!r}, "w") as go:  # the helper forks its child now
        go.write("go\\n")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not child_sleeps():
        time.sleep(0.01)
    yield

def child_sleeps():
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if "{tag}-child" in " ".join(proc.info["cmdline"] or ()) and proc.children():
                return True
        except psutil.Error:
            continue
    return False
""")
    pytester.makepyfile(test_held="def test_one(helper):\n    pass\n\ndef test_two(shared):\n    pass\n")

    try:
        result = run(GRACE, "--hermes-leak-check=error")

        out = result.stdout.str()
        result.assert_outcomes(passed=2, errors=1)
        assert re.search(rf"test_one: resources outlived the test.*\n(.*leaked child process.*\n)*.*sh -c sleep 300; "
                         rf": {tag}-child", out), out[-3000:]
        assert "test_two: resources" not in out, out[-3000:]
        assert not _tagged(tag), "a child of the leaked helper outlived the run"
    finally:
        kill_quietly(_tagged(tag))


def _tagged(tag: str) -> list[int]:
    """Live processes whose command line names ``tag``, and their children."""
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            if tag in " ".join(proc.info["cmdline"] or ()) and proc.info["status"] != psutil.STATUS_ZOMBIE:
                out += [proc.pid, *(child.pid for child in proc.children(recursive=True))]
    return out
