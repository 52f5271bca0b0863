"""Bug: a test that ran pytest in this process (``pytester.runpytest``, in-process by default: how a
plugin's or a backend's own tests run it) closed, at that inner run's end, every shared transport
of the process, the outer run's too: the docker transport's run container was removed under a
module fixture's kernel, whose next cell came back ``died``, ``transport_lost`` ("channel lost ...
container stopped"). Now a run inside a run closes only the shared transports it made; the outer
run's stay open for its own end (which then leaves nothing: the ``run`` fixture checks).
"""

from __future__ import annotations

import pytest

SUITE = """
import pytest
from pytest_hermes_kernel import start_kernel

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def kernel():
    with start_kernel("{transport}") as k:
        yield k


def test_before(kernel):
    assert kernel.execute("x = 41").status == "ok"


def test_an_inner_run(pytester):
    pytester.makepyfile(test_inner="def test_x(hermes_kernel):\\n    assert hermes_kernel.execute('1').value == '1'\\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "--hermes-transport={transport}").assert_outcomes(passed=1)


def test_after(kernel):
    result = kernel.execute("x + 1")
    assert result.value == "42", result.summary()
"""


@pytest.mark.parametrize("transport", ["docker", "ssh", "local"])
def test_the_outer_runs_kernel_lives_through_an_inner_run(pytester: pytest.Pytester, run, request, transport) -> None:
    if transport in ("docker", "ssh"):
        request.getfixturevalue("docker_ready")
    pytester.makepyfile(test_suite=SUITE.format(transport=transport))

    result = run(f"--hermes-transport={transport}", "-p", "no:rerunfailures")

    result.assert_outcomes(passed=3)
