"""The fixtures (hermes_transport, hermes_kernel, hermes_kernel_factory, hermes_registry), the
hermes_kernel(...) marker and the end-of-run summary, as a suite that uses them sees them."""

from __future__ import annotations

FIXTURE_TESTS = """
from pytest_hermes_kernel import KernelKey
from pytest_hermes_kernel.transports import Transport

def test_transport_is_the_selected_one(hermes_transport):
    assert isinstance(hermes_transport, Transport) and hermes_transport.name == "local"

def test_kernel_keeps_state_between_cells(hermes_kernel):
    hermes_kernel.execute("x = 41")
    assert hermes_kernel.execute("x + 1").value == "42"

def test_factory_starts_separate_kernels_with_their_own_options(hermes_kernel_factory):
    a, b = hermes_kernel_factory(), hermes_kernel_factory(max_output_bytes=2000)
    assert a.pid != b.pid
    a.execute("x = 1")
    assert b.execute("x").ename == "NameError"
    assert b.execute("print('y' * 5000)").stdout_truncated
    assert not a.execute("print('y' * 5000)").stdout_truncated

def test_registry_gives_each_owner_its_own_kernel(hermes_registry):
    alice, bob = KernelKey(owner="alice"), KernelKey(owner="bob")
    hermes_registry.execute(alice, "x = 'alice'")
    assert hermes_registry.execute(alice, "x").value == "'alice'"
    assert hermes_registry.execute(bob, "x").ename == "NameError"
    assert sorted(s.key.owner for s in hermes_registry.snapshot()) == ["alice", "bob"]
"""

MARKER_TESTS = """
import pytest
from pytest_hermes_kernel import WatchdogPolicy

@pytest.mark.hermes_kernel(timeout=1, watchdog=WatchdogPolicy(interrupt_grace=1, kill_grace=1))
def test_marker_timeout(hermes_kernel):
    r = hermes_kernel.execute("import time; time.sleep(3)")
    assert r.status == "timeout" and r.watchdog == "interrupted"

@pytest.mark.hermes_kernel(max_output_bytes=2000)
def test_marker_output_cap(hermes_kernel):
    r = hermes_kernel.execute("print('x' * 100_000)")
    assert r.stdout_truncated and len(r.stdout) <= 2000 and r.stdout_dropped_bytes > 90_000

@pytest.mark.hermes_kernel(tools={"double": lambda n: 2 * n})
def test_marker_tools(hermes_kernel):
    r = hermes_kernel.execute("import hermes_tools\\nhermes_tools.double(n=21)")
    assert r.value == "42" and [c["name"] for c in r.tool_calls] == ["double"]

@pytest.mark.hermes_kernel(timeout=1)
class TestClosestMarkerWins:
    @pytest.mark.hermes_kernel(timeout=None)
    def test_method_marker_beats_class_marker(self, hermes_kernel):
        assert hermes_kernel.options.timeout is None

    def test_class_marker_applies(self, hermes_kernel):
        assert hermes_kernel.options.timeout == 1
"""

BAD_MARKER_TESTS = """
import pytest

@pytest.mark.hermes_kernel(timeout="soon")
def test_bad_value(hermes_kernel):
    pass

@pytest.mark.hermes_kernel(5)
def test_positional(hermes_kernel):
    pass

@pytest.mark.hermes_kernel(no_such_option=1)
def test_unknown_option(hermes_kernel):
    pass

@pytest.mark.hermes_kernel(tools=["double"])
def test_tools_not_a_dict(hermes_kernel):
    pass

def test_good(hermes_kernel):
    pass
"""


def test_fixtures_hand_out_working_kernels_and_the_summary_counts_them(pytester, run):
    pytester.makepyfile(test_fixtures=FIXTURE_TESTS)

    result = run("-v")

    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([
        "hermes-kernel: transports=local cell-timeout=60 s leak-check=warn max-kernels=4",
        "*test_transport_is_the_selected_one[[]local[]] PASSED*",
        "*= hermes-kernel summary =*",
        "kernels started: 5; peak alive: 2; deaths and resets by reason: none",
    ])
    assert "leaked" not in result.stdout.str()  # every fixture kernel was shut down after its test


def test_marker_sets_timeout_output_cap_and_tools(pytester, run):
    pytester.makepyfile(test_marker=MARKER_TESTS)
    result = run("-v")
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["kernels started: 5;*"])


def test_bad_marker_errors_the_test_that_has_it(pytester, run):
    pytester.makepyfile(test_bad=BAD_MARKER_TESTS)

    result = run()

    result.assert_outcomes(passed=1, errors=4)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of test_bad_value[[]local[]]*",
        "test_bad.py::test_bad_value[[]local[]]: bad hermes_kernel marker: "
        "timeout must be a number of seconds >= 0 or None, not 'soon'",
        "*ERROR at setup of test_positional[[]local[]]*",
        "test_bad.py::test_positional[[]local[]]: @pytest.mark.hermes_kernel(...) takes keyword arguments only, "
        "got positional (5,)",
        "*ERROR at setup of test_unknown_option[[]local[]]*",
        "test_bad.py::test_unknown_option[[]local[]]: unknown keyword 'no_such_option' of @pytest.mark.hermes_kernel*",
        "*ERROR at setup of test_tools_not_a_dict[[]local[]]*",
        "test_bad.py::test_tools_not_a_dict[[]local[]]: bad hermes_kernel marker: tools must be a dict*",
    ])


DYNAMIC_CONFTEST = """
from pytest_hermes_kernel.transports import register_transport
from pytest_hermes_kernel.transports.local import LocalTransport


class Mirror(LocalTransport):
    pass


register_transport("mirror", Mirror)  # a second transport name, as a backend would add one
"""

DYNAMIC_TESTS = """
import pytest

@pytest.fixture
def kernel_asked_late(request):
    return request.getfixturevalue("hermes_kernel")

def test_late(kernel_asked_late, request):
    print(f"RAN {request.node.name} on {type(kernel_asked_late.transport).__name__}")
"""


def test_a_kernel_asked_for_while_the_test_runs_never_takes_one_leg_for_the_whole_matrix(pytester, run):
    # request.getfixturevalue("hermes_kernel") is outside the matrix's parametrization: the test ran
    # once, on the first transport, and passed as if for every leg
    pytester.makeconftest(DYNAMIC_CONFTEST)
    pytester.makepyfile(test_late=DYNAMIC_TESTS)

    matrix = run("-s", "--hermes-transport=local,mirror")

    matrix.assert_outcomes(errors=1)
    matrix.stdout.fnmatch_lines([
        "test_late.py::test_late: the --hermes-transport matrix (local, mirror) runs a test once per transport*"
        "request.getfixturevalue*it would run on local alone*Hint: name hermes_kernel*"])
    assert "RAN" not in matrix.stdout.str()
    one = run("-s", "--hermes-transport=mirror")  # one transport: nothing to miss
    one.assert_outcomes(passed=1)
    one.stdout.fnmatch_lines(["*RAN test_late on Mirror"])
