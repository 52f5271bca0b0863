"""pytest 9's native ``[tool.pytest]`` table gives each value its TOML type, and pytest checks it
against the type a key was registered with: every ``hermes_*`` setting is registered as a string
(typed ini keys came in pytest 8.4, this package supports 8.0), so ``hermes_timeout = 30`` stopped
the run before any test with ``config option 'hermes_timeout' expects a string, got int: 30``
(README said to quote it). A number or switch there is now read as its text; any other type
(a list for a single value) still stops the run with pytest's error."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.skipif(tuple(int(p) for p in pytest.__version__.split(".")[:1]) < (9,),
                                reason=f"pytest {pytest.__version__} has no native [tool.pytest] table (pytest 9)")

CELL = """
def test_budget(hermes_kernel):
    result = hermes_kernel.execute("import time; time.sleep(30)")
    assert result.status == "timeout", result.summary()
"""


def test_a_native_number_and_switch_are_read_as_the_ini_would(pytester, run):
    pytester.makepyfile(CELL)
    pytester.makepyprojecttoml('[tool.pytest]\nhermes_timeout = 1\nhermes_keep_failed = false\n'
                               'hermes_leak_check = "error"\nhermes_transport = ["local"]\n')

    result = run("-v")

    result.assert_outcomes(passed=1)
    assert "expects a string" not in result.stderr.str()


def test_a_native_float_is_a_budget_too(pytester, run):
    pytester.makepyfile(CELL)
    pytester.makepyprojecttoml("[tool.pytest]\nhermes_timeout = 0.5\n")

    run().assert_outcomes(passed=1)


def test_a_native_value_of_another_shape_is_still_refused(pytester, run):
    pytester.makepyfile("def test_nothing(): pass")
    pytester.makepyprojecttoml("[tool.pytest]\nhermes_timeout = [1]\n")

    result = run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*config option 'hermes_timeout' expects a string, got list: [[]1[]]*"])


@pytest.mark.parametrize("value, legs", [('"local"', ["local"]), ('"local,filecell"', ["local", "filecell"]),
                                         ('"local filecell"', ["local", "filecell"])])
def test_a_native_string_for_a_list_key_is_read_as_the_ini_would(pytester, run, value, legs):
    """``hermes_transport = "local"`` (as the option's value is written) stopped the run with
    ``config option 'hermes_transport' expects a list for type 'args', got str: 'local'``: pytest
    checks a list key's native value for a list, where ``[tool.pytest.ini_options]`` takes a string."""
    pytester.makepyfile("def test_leg(hermes_kernel):\n    assert hermes_kernel.execute('1').value == '1'\n")
    pytester.makepyprojecttoml(f"[tool.pytest]\nhermes_transport = {value}\n")

    result = run("-v")

    result.assert_outcomes(passed=len(legs))
    result.stdout.fnmatch_lines([f"*test_leg[[]{leg}[]] PASSED*" for leg in legs])
    assert "expects a list" not in result.stderr.str()
