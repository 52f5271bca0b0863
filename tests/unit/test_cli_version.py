"""``hermes-kernel --version`` prints the installed package's version (its metadata) and exits 0:
there was no such option (``error: the following arguments are required: cmd``, exit status 2)."""

from __future__ import annotations

from importlib.metadata import version

import pytest

from pytest_hermes_kernel.cli import main


def test_version_prints_the_installed_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])

    assert exit_.value.code == 0
    assert capsys.readouterr().out == f"hermes-kernel {version('pytest-hermes-kernel')}\n"
