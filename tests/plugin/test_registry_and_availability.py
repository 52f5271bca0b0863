"""The hermes_registry options (--hermes-max-kernels, --hermes-idle-timeout) and what a test on
a transport that cannot run here does: skip with the reason, or fail under
--hermes-require-transports."""

from __future__ import annotations

import pytest

REGISTRY_TESTS = """
import time
from pytest_hermes_kernel import KernelKey

def test_cap_evicts_the_least_recently_used(hermes_registry):
    alice, bob = KernelKey(owner="alice"), KernelKey(owner="bob")
    hermes_registry.execute(alice, "x = 1")
    hermes_registry.execute(bob, "x = 2")  # over the cap of 1: alice's kernel goes

    r = hermes_registry.execute(alice, "x")

    assert r.ename == "NameError" and r.kernel.state_lost and r.kernel.reason == "evicted"

def test_idle_kernel_is_reaped(hermes_registry):
    alice = KernelKey(owner="alice")
    hermes_registry.execute(alice, "x = 1")
    deadline = time.monotonic() + 10
    while len(hermes_registry):  # reaped by the reap step run here or by the registry's reaper thread
        assert time.monotonic() < deadline
        hermes_registry.reap_once()
        time.sleep(0.05)

    r = hermes_registry.execute(alice, "x")

    assert r.kernel.state_lost and r.kernel.reason == "idle_reaped"
"""

UNAVAILABLE_CONFTEST = """
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.transports import register_transport

def _cannot_run_here(**options):
    raise TransportUnavailableError("the moon transport needs a moon. Hint: run on the moon")

register_transport("moon", _cannot_run_here)
"""

UNAVAILABLE_TESTS = """
def test_x(hermes_kernel):
    pass
"""


def test_max_kernels_and_idle_timeout_configure_the_registry(pytester, run):
    pytester.makepyfile(test_registry=REGISTRY_TESTS)

    result = run("-v", "--hermes-max-kernels=1", "--hermes-idle-timeout=0.5")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["hermes-kernel: transports=local cell-timeout=60 s leak-check=warn max-kernels=1"])


def test_unavailable_transport_skips_with_its_reason(pytester, run):
    pytester.makeconftest(UNAVAILABLE_CONFTEST)
    pytester.makepyfile(test_moon=UNAVAILABLE_TESTS)

    result = run("-rs", "--hermes-transport=local,moon")

    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1[]] *the moon transport needs a moon. Hint: run on the moon"])


@pytest.mark.parametrize("how", ["cli", "env"])
def test_require_transports_turns_the_skip_into_a_failure(pytester, run, monkeypatch, how):
    pytester.makeconftest(UNAVAILABLE_CONFTEST)
    pytester.makepyfile(test_moon=UNAVAILABLE_TESTS)
    args = ["--hermes-transport=local,moon"]
    if how == "cli":
        args.append("--hermes-require-transports")
    else:
        monkeypatch.setenv("PYTEST_HERMES_REQUIRE_TRANSPORTS", "true")

    result = run(*args)

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["hermes-kernel: transports=local,moon * require-transports",  # a CI log shows it
                                 "*required transport unavailable: the moon transport needs a moon*"])
    assert "During handling of the above exception" not in result.stdout.str()  # the message says it all


SCENARIO = """
[scenario]
name = "on-the-moon"
source = "test"

[[cell]]
code = "1"
"""


@pytest.mark.parametrize("require", [False, True], ids=["skip", "require"])
def test_a_scenario_on_a_transport_that_cannot_run_here_is_treated_as_a_test(pytester, run, require):
    """A CI-user helper: a scenario item failed (``FAILED ... TransportUnavailableError``) where a
    test errored at setup under --hermes-require-transports, and its skip was located in the
    plugin's own module, not at the scenario file."""
    pytester.makeconftest(UNAVAILABLE_CONFTEST)
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "moon.toml").write_text(SCENARIO)

    result = run("-rs", "fixtures", "--hermes-transport=moon", *(["--hermes-require-transports"] if require else []))

    if require:
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*ERROR at setup of scenario on-the-moon [[]moon[]]*",
                                     "*required transport unavailable: the moon transport needs a moon*"])
    else:
        result.assert_outcomes(skipped=1)
        result.stdout.fnmatch_lines(["SKIPPED [[]1[]] fixtures/moon.toml:1: the moon transport needs a moon*"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["plain", "xdist"])
def test_the_summary_names_a_leg_that_did_not_run_here(pytester, run, workers):
    """A CI-maintainer helper: a one-leg job (``--hermes-transport=docker`` on a runner without
    docker) ended ``1 passed, 3 skipped``, exit status 0, and printed no hermes-kernel line at all:
    nothing at the end of the log said the leg never ran, nor what makes it fail instead."""
    pytester.makeconftest(UNAVAILABLE_CONFTEST)
    pytester.makepyfile(test_moon=UNAVAILABLE_TESTS + "\ndef test_y(hermes_kernel):\n    pass\n\n"
                        "def test_no_kernel():\n    pass\n")

    result = run("--hermes-transport=moon", *workers)

    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == 0  # pytest's own: skips are green; the summary is what says so
    result.stdout.fnmatch_lines(["*= hermes-kernel summary =*", "kernels started: 0; *",
                                 "the moon leg did not run here: 2 tests skipped (the moon transport needs a moon. "
                                 "Hint: run on the moon); --hermes-require-transports makes them fail instead*"])


def test_the_summary_names_a_scenario_leg_that_did_not_run_here(pytester, run):
    pytester.makeconftest(UNAVAILABLE_CONFTEST)
    pytester.mkdir("fixtures")
    pytester.path.joinpath("fixtures", "moon.toml").write_text(SCENARIO)

    result = run("fixtures", "--hermes-transport=local,moon")

    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["the moon leg did not run here: 1 test skipped (the moon transport needs a moon*"])
    assert "local leg did not run" not in result.stdout.str()


def test_a_test_s_own_skip_of_a_transport_it_made_names_no_leg(pytester, run):
    """The summary's leg line counts the matrix's legs only: a test that makes a transport itself and
    skips when it cannot run is no leg of the run (it was counted as 'the local leg did not run')."""
    pytester.makeconftest(UNAVAILABLE_CONFTEST)
    pytester.makepyfile(test_own="""
import pytest
from pytest_hermes_kernel.errors import TransportUnavailableError
from pytest_hermes_kernel.transports import make_transport

@pytest.fixture
def moon():  # skips at setup, as the kit's own fixture does
    try:
        return make_transport("moon")
    except TransportUnavailableError as exc:
        pytest.skip(str(exc))

def test_own(hermes_kernel, moon):
    pass
""")

    result = run("-rs")

    result.assert_outcomes(skipped=1)
    assert "leg did not run here" not in result.stdout.str()
