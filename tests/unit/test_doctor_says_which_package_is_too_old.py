"""A package pip downgraded after this one was installed (pip only warns) was not named by
``hermes-kernel doctor``: with docker 7.0.0 (and requests 2.34) it said ``docker NO ... did not
answer: ... Not supported URL scheme http+docker`` and told the user to start dockerd, which
was running; pytest 7.4 was not mentioned at all, while every pytest run ended ``ini
hermes_transport is set but empty``. Now each line names the package under its declared minimum
and the upgrade, from the installed package's own metadata (found by a breaker session that
installed the lowest versions, 2026-12-05)."""

from __future__ import annotations

import importlib.metadata

import pytest

from pytest_hermes_kernel.cli import main
from tests.unit.test_declared_minimums import declared


def installed_as(monkeypatch: pytest.MonkeyPatch, **versions: str) -> None:
    """``versions`` installed, and this checkout's pyproject as the package's metadata (the venv's
    may be an older install's)."""
    real_version, real_requires = importlib.metadata.version, importlib.metadata.requires
    monkeypatch.setattr(importlib.metadata, "version", lambda name: versions.get(name, None) or real_version(name))
    monkeypatch.setattr(importlib.metadata, "requires",
                        lambda name: declared() if name == "pytest-hermes-kernel" else real_requires(name))


def test_an_sdk_under_its_declared_minimum_is_named_with_the_upgrade(monkeypatch, capsys) -> None:
    installed_as(monkeypatch, docker="7.0.0")

    assert main(["doctor", "docker"]) == 1

    out = capsys.readouterr().out
    assert out.startswith("docker    NO  too old: docker 7.0.0 (docker>=7.1 needed); "), out
    assert "Hint: pip install -U 'docker>=7.1'" in out, out


def test_pytest_and_paramiko_under_their_minimums_are_named_on_their_lines(monkeypatch, capsys) -> None:
    installed_as(monkeypatch, pytest="7.4.0", paramiko="3.4.0")

    assert main(["doctor", "local", "ssh", "filecell"]) == 1

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("local     NO  too old: pytest 7.4.0 (pytest>=8.0 needed); "), lines
    assert lines[1].strip() == "Hint: pip install -U 'pytest>=8.0'", lines
    assert lines[2].startswith("ssh       NO  too old: pytest 7.4.0 (pytest>=8.0 needed), paramiko 3.4.0 "
                               "(paramiko>=4.0 needed); "), lines
    assert lines[2].count("paramiko ") == 1, lines  # its own "paramiko 3.4.0; " repeated the version
    assert lines[4].startswith("filecell  NO  too old: pytest 7.4.0 (pytest>=8.0 needed); "), lines  # it said ok


def test_versions_at_or_over_the_minimums_change_nothing(monkeypatch, capsys) -> None:
    installed_as(monkeypatch, pytest="8.0", docker="7.1.0", paramiko="4.0.0", psutil="5.9.0", filelock="3.12.0")

    main(["doctor", "local", "filecell"])

    assert "too old" not in capsys.readouterr().out
