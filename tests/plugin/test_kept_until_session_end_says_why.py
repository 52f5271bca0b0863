"""``--hermes-keep-failed`` on a kernel that cannot outlive the session: the summary said only
``(shut down at session end: it cannot outlive it)``. A new user running the failing test of
README's post-mortem flow on docs/reference.md's ``NiceTransport`` (registered with
``register_transport``) got that line and no reason, where README promises "as the summary says".
Now the line ends with why: the transport is not ``keepable`` (its name), a fault's kernel, or
``hermes_oom``'s memory cgroup (``tests/plugin/test_keep_failed.py`` checks filecell and oom)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.plugin.test_keep_failed import kept_env as kept_env  # noqa: F401 - the fixture, reused

CONFTEST = """
from pytest_hermes_kernel.transports import LocalTransport, register_transport


class Mine(LocalTransport):
    name = "mine"
    keepable = False


register_transport("mine", Mine)
"""

FAILING = """
def test_fails(hermes_kernel):
    hermes_kernel.execute("x = 1")
    assert False, "deliberate failure"
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, kept_env: Path) -> Iterator[None]:  # noqa: F811
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_keep=FAILING)
    yield


def test_a_transport_of_ones_own_that_keeps_nothing_is_named(suite, run) -> None:
    result = run("--hermes-keep-failed", "--hermes-transport=mine")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["kept for post-mortem: test_keep.py::test_fails[[]mine[]]: kernel * (shut down at "
                                 "session end: it cannot outlive it: the mine transport keeps no kernel past the "
                                 "session (Transport.keepable is False))"])


def test_a_fault_markers_kernel_says_so(suite, run, pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_keep=FAILING.replace("def test_fails", "import pytest\n\n"
                                                  "@pytest.mark.hermes_host_sigkill(after_cell=2)\ndef test_fails"))

    result = run("--hermes-keep-failed", "--hermes-transport=local")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["kept for post-mortem: test_keep.py::test_fails[[]local[]]: kernel * (shut down at "
                                 "session end: it cannot outlive it: a fault marker's kernel (a host harness, or one "
                                 "a fault fires on) goes with the run)"])
