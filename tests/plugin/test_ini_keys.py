"""A misspelled ``hermes_*`` ini key stops the run with a did-you-mean (it got only pytest's
"Unknown config option" warning, in the summary of a run that used the default), and a
misspelled transport name's usage error comes without a warnings summary before it."""

from __future__ import annotations

import re

import pytest


@pytest.mark.parametrize("where", ["pytest.ini", "setup.cfg", "pyproject.toml", "-o"])
def test_a_misspelled_ini_key_is_a_usage_error_with_a_did_you_mean(pytester, run, where):
    pytester.makepyfile("def test_nothing(): pass")
    args = []
    if where == "pytest.ini":
        pytester.makefile(".ini", pytest="[pytest]\nhermes_timout = 5\n")
    elif where == "setup.cfg":
        pytester.makefile(".cfg", setup="[tool:pytest]\nhermes_timout = 5\n")
    elif where == "pyproject.toml":
        pytester.makepyprojecttoml('[tool.pytest.ini_options]\nhermes_timout = "5"\n')
    else:
        args = ["-o", "hermes_timout=5"]

    result = run(*args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    shown = "from -o" if where == "-o" else f"in {pytester.path / where}"
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: unknown ini key hermes_timout ({shown}); "
                                 "did you mean 'hermes_timeout'?", "known hermes_* keys: hermes_transport, *"])
    assert "passed" not in result.stdout.str()  # the run never started on the default


def test_known_and_foreign_ini_keys_pass(pytester, run):
    """A correct key, and a key outside the ``hermes_`` prefix, are not this check's business."""
    pytester.makepyfile("def test_nothing(): pass")
    pytester.makeini("[pytest]\nhermes_timeout = 5\nhermes_leak_check = warn\nsomeone_elses = 1\n")

    result = run()

    result.assert_outcomes(passed=1, warnings=1)  # pytest's own warning for someone_elses
    assert "hermes_" not in result.stdout.str().partition("warnings summary")[2].partition("-- Docs")[0]


def test_a_misspelled_transport_errors_without_a_warnings_summary(pytester, run):
    """The "1 warning" before ``unknown transport 'dockr'`` was pytest's unknown-key warning for a
    misspelled ``hermes_*`` ini key (pytest checks ini keys after collection, where the transport
    error is raised); that key now stops the run first, and the plugin adds no warning of its own."""
    pytester.makepyfile("def test_cell(hermes_kernel): pass")

    alone = run("--hermes-transport=dockr")
    pytester.makeini("[pytest]\nhermes_timout = 5\n")
    with_typo = run("--hermes-transport=dockr")

    for result in (alone, with_typo):
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        out = result.stdout.str()
        assert "warnings summary" not in out and not re.search(r"\d+ warnings? in", out), out
    alone.stderr.fnmatch_lines(["ERROR: pytest-hermes-kernel: unknown transport 'dockr'; did you mean 'docker'?*"])
    with_typo.stderr.fnmatch_lines(["ERROR: pytest-hermes-kernel: unknown ini key hermes_timout *"])


@pytest.mark.parametrize("name, closest", [("PYTEST_HERMES_TIMOUT", "PYTEST_HERMES_TIMEOUT"),
                                           ("PYTEST_HERMES_TRANSPORTS", "PYTEST_HERMES_TRANSPORT")])
def test_a_misspelled_environment_variable_is_a_usage_error_with_a_did_you_mean(pytester, run, monkeypatch,
                                                                                 name, closest):
    """A fresh-install helper: ``PYTEST_HERMES_TIMOUT=5`` was ignored without a word, and a CI leg
    with ``PYTEST_HERMES_TRANSPORTS=docker`` would have run on the default, ``local``."""
    pytester.makepyfile("def test_nothing(): pass")
    monkeypatch.setenv(name, "5")

    result = run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pytest-hermes-kernel: unknown environment variable {name}; "
                                 f"did you mean '{closest}'?", "known PYTEST_HERMES_* variables: *"])
    assert "passed" not in result.stdout.str()
