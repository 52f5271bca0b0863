"""Stumble (a newcomer's walk through the README, 2026-12-06): a test that holds a module-scoped
docker kernel from ``start_kernel("docker")`` and runs pytest in-process with a transport option
(``--hermes-image=hermes-kernel-host:latest``, the default image named) saw the inner test error at
setup, ``the shared docker transport of this process was already made, by ...(outer) with no
options``: the outer kernel made the process's shared docker transport, which the inner run's
fixtures cannot remake with the run's options. The README's pytester row said nothing of it. It
says now what holds (the outer kernel on a transport of its own, ``make_transport("docker")``: the
inner run's option applies, the outer kernel lives on) and that this test checks it.
"""

from __future__ import annotations

import pytest

from tests.docs.readme import readme_text

SUITE = """
import pytest
from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def kernel():
    {hold}


def test_an_inner_run_with_an_option(kernel, pytester):
    kernel.execute("x = 41")
    pytester.makepyfile(test_inner="def test_x(hermes_kernel):\\n    assert hermes_kernel.execute('1').value == '1'\\n")
    inner = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:rerunfailures",
                                         "--hermes-transport=docker", "--hermes-image=hermes-kernel-host:latest")
    inner.assert_outcomes(passed=1)
    assert kernel.execute("x + 1").value == "42"
"""

SHARED = """with start_kernel("docker") as k:
        yield k"""
OWN = """transport = make_transport("docker")
    with start_kernel(transport) as k:
        yield k
    transport.close()"""


def pytester_row() -> str:
    return next(line for line in readme_text().splitlines() if line.startswith("| pytester ("))


@pytest.mark.parametrize("hold", ["shared", "own"])
def test_what_the_readme_says_of_an_inner_runs_transport_options(pytester: pytest.Pytester, run, docker_ready,
                                                                  hold: str) -> None:
    pytester.makepyfile(test_suite=SUITE.format(hold=SHARED if hold == "shared" else OWN))

    result = run("--hermes-transport=docker", "-p", "no:rerunfailures")

    row = pytester_row()
    assert 'make_transport("docker")' in row and "--hermes-image" in row, row
    assert "tests/plugin/test_an_in_process_pytester_run_with_transport_options.py" in row, row
    if hold == "shared":
        assert "the shared docker transport of this process was already made" in row, row
        result.assert_outcomes(failed=1)
        assert "the shared docker transport of this process was already made" in result.stdout.str()
    else:
        result.assert_outcomes(passed=1)
