"""``hermes-kernel doctor local`` makes a kernel dir where each local start makes one: under
``PYTEST_HERMES_KERNEL_DIR`` when set, else the temp dir.

Before (found by a breaker helper following the README on 2026-12-06): with
``PYTEST_HERMES_KERNEL_DIR=/nonexist`` the doctor said ``local ok``, exit status 0, and every local test
of the run then errored ``KernelStartError: cannot make a kernel dir under /nonexist
($PYTEST_HERMES_KERNEL_DIR): No such file or directory``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_hermes_kernel import cli


def test_a_root_that_cannot_hold_kernel_dirs_is_a_no_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nonexist"
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(missing))
    assert cli.main(["doctor", "local"]) == 1
    out = capsys.readouterr().out
    assert out.startswith(f"local     NO  cannot make a kernel dir under {missing} ($PYTEST_HERMES_KERNEL_DIR): "
                          "No such file or directory\n"), out
    assert "Hint: make it, or point PYTEST_HERMES_KERNEL_DIR at a writable directory" in out, out


def test_a_usable_root_is_ok_and_left_as_it_was(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PYTEST_HERMES_KERNEL_DIR", str(tmp_path))
    assert cli.main(["doctor", "local"]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out.startswith("local     ok  ")
    assert os.listdir(tmp_path) == []  # the dir it tried is gone
