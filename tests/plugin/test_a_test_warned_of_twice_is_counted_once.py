"""Bug: a test whose own leak was warned of, and whose teardown then ended a module fixture that
left something too (two looks, each warned of: the test's own first, before the wider fixtures
end, then what their teardown left), was counted twice in the summary: ``leaks only warned of: 2
tests (test_two_looks.py::test_a, test_two_looks.py::test_a)`` for one test. Now each test is
named once, as the incomplete-check line already did.
"""

from __future__ import annotations

import pytest

SUITE = """
import subprocess

import pytest

LEFT = []


@pytest.fixture(scope="module")
def module_helper():
    yield
    LEFT.append(subprocess.Popen(["sleep", "300"]))  # its teardown leaves a process


def test_a(module_helper):
    LEFT.append(subprocess.Popen(["sleep", "300"]))  # and so does the test
"""


def test_a_test_warned_of_in_both_its_looks_is_named_once(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_two_looks=SUITE)
    result = run("--hermes-leak-grace=0.2", "-W", "ignore::pytest.PytestUnraisableExceptionWarning")
    result.assert_outcomes(passed=1, warnings=2)  # one per look: the test's own, then its module fixture's
    result.stdout.fnmatch_lines(["leaks only warned of: 1 test (test_two_looks.py::test_a): see HermesLeakWarning *"])
