"""A leak warning of a decorated test is shown at the test's ``def`` line, as README ("A leak check
failed") says: pytest's location of a decorated function is its first decorator's line, and a
fresh user (2026-12-07) read the warning under ``@pytest.mark.hermes_transports("local")``."""

from __future__ import annotations

DECORATED = '''
import subprocess

import pytest


@pytest.mark.parametrize("n", [1])
@pytest.mark.filterwarnings(
    "default",
)
def test_leaks_a_sleeper(n):
    subprocess.Popen(["sleep", "30"])


class TestInAClass:
    @pytest.mark.parametrize("n", [3])
    def test_leaks_too(self, n):
        subprocess.Popen(["sleep", "30"])
'''


def test_the_warning_names_and_shows_the_def_line_not_the_first_decorator(pytester, run):
    pytester.makepyfile(test_decorated=DECORATED)

    result = run("--hermes-leak-grace=0.5")

    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*/test_decorated.py:10: HermesLeakWarning: test_decorated.py::test_leaks_a_sleeper[[]1[]]: *",
        "*/test_decorated.py:16: HermesLeakWarning: test_decorated.py::TestInAClass::test_leaks_too[[]3[]]: *",
    ])
    assert "    def test_leaks_a_sleeper(n):" in out and "    def test_leaks_too(self, n):" in out, out
    assert ":6: HermesLeakWarning" not in out and ":15: HermesLeakWarning" not in out, out  # not the decorators
