"""A kept dir the commands refuse to trust (open to others, not a directory) is reported in one
line with a hint: ``hermes-kernel ls``, ``exec``, ``attach``, ``sweep --kept`` and the plain
``sweep`` ended in a traceback (``UnsafeRunDirError: refusing to read kept kernels from ...``),
the plain ``sweep`` before it had swept anything else. ``sweep`` sweeps the other kinds and
says the kept ones were skipped, as it does for containers with no engine."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept


@pytest.fixture(params=["open", "file"])
def unsafe_kept_dir(request: pytest.FixtureRequest, private_tmp: Path) -> str:
    """The kept dir, open to others (0755) or a plain file."""
    path = kept.kept_dir()
    if request.param == "open":
        os.chmod(path, 0o755)
    else:
        os.rmdir(path)
        Path(path).write_text("", encoding="utf-8")
    return path


@pytest.mark.parametrize("argv", [["ls"], ["exec", "abc", "1"], ["attach", "abc"], ["sweep", "--kept"]],
                         ids=["ls", "exec", "attach", "sweep-kept"])
def test_a_kept_kernel_command_says_why_it_refuses_the_kept_dir(unsafe_kept_dir: str, argv: list[str],
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)

    err = capsys.readouterr().err
    assert code == 1, err
    assert "Traceback" not in err
    assert err.startswith(f"hermes-kernel {argv[0]}: refusing to read kept kernels from {unsafe_kept_dir}: "), err
    assert f"Hint: kept kernels' records are trusted only in a 0700 directory of yours: fix or remove " \
           f"{unsafe_kept_dir}" in err, err


def test_a_sweep_sweeps_the_rest_and_says_it_skipped_the_kept_kernels(unsafe_kept_dir: str,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sweep", "--dry-run", "run-files", "kept", "kernel-dirs"])

    out = capsys.readouterr().out
    assert code == 0
    assert f"kept: skipped (refusing to read kept kernels from {unsafe_kept_dir}: " in out, out
    # (kernel dirs: filecell's root is this machine's, not this test's: another test's may be listed)
    assert re.search(r"^sweep \(dry run, nothing removed\): 0 run files, 0 kept, \d+ kernel dirs?$", out, re.M), out
