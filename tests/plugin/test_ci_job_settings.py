"""What a CI job's settings do when several places give one: the report header says which
environment variable a command-line option (the ini's ``addopts`` and ``PYTEST_ADDOPTS`` included)
overrode, so a job's ``PYTEST_HERMES_*`` that lost is not lost unseen."""

from __future__ import annotations

import pytest

TESTS = """
def test_x(hermes_kernel):
    pass
"""


def test_an_environment_setting_an_addopts_option_overrides_is_named_in_the_header(pytester, run, monkeypatch):
    """A CI-maintainer helper: ``addopts = --hermes-transport=local,filecell`` in the ini and a job's
    ``PYTEST_HERMES_TRANSPORT=local`` ran both legs, and nothing said the variable was not used (the
    precedence table says CLI > env > ini: addopts is in the ini, but pytest puts it on the command line)."""
    pytester.makeini("[pytest]\naddopts = --hermes-transport=local,filecell\n")
    pytester.makepyfile(test_legs=TESTS)
    monkeypatch.setenv("PYTEST_HERMES_TRANSPORT", "local")

    result = run("-v")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["hermes-kernel: transports=local,filecell *",
                                 "hermes-kernel: not used: PYTEST_HERMES_TRANSPORT=local: the command line's option "
                                 "wins over the environment (an option in the ini's addopts or in PYTEST_ADDOPTS is on "
                                 "the command line)"])


@pytest.mark.parametrize(("env", "args"), [
    ({"PYTEST_HERMES_TRANSPORT": "local"}, ["--hermes-transport=local"]),  # the same value: nothing lost
    ({"PYTEST_HERMES_KEEP_FAILED": "1"}, ["--hermes-keep-failed"]),  # 1 and the flag's true are one value
    ({"PYTEST_HERMES_TIMEOUT": "5"}, []),  # the environment's value is the one used
], ids=["same-transport", "same-switch", "env-used"])
def test_no_note_where_the_environment_s_value_is_the_one_used(pytester, run, monkeypatch, env, args):
    pytester.makepyfile(test_legs=TESTS)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    result = run(*args)

    result.assert_outcomes(passed=1)
    assert "not used:" not in result.stdout.str()
