"""Seen (left alone by the non-root round, fixed 2026-12-05): filecell's old default root,
``/tmp/hermes-filecell``, was shared by every user, and the sweep still looks there. Root's
``hermes-kernel sweep`` removed another user's filecell kernel dir there once its runner was gone
("removed filecell kernel dir ... (its runner ... is gone)"), though the README says a sweep looks
only at your own user's files. Now a dir another user owns is neither listed nor removed; one of
this user's own still is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_hermes_kernel.transports import leftovers
from pytest_hermes_kernel.transports.filecell import transport as filecell


def test_a_sweep_removes_only_its_own_users_filecell_dirs_under_the_old_shared_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root, to make a dir another user owns")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a runner pid that is gone
    dirs = {}
    for who, uid in (("theirs", 1002), ("ours", os.getuid())):
        dirs[who] = tmp_path / f"k-{who}"
        dirs[who].mkdir(mode=0o700)
        (dirs[who] / "runner.pid").write_text(f"{gone.pid}\n")
        os.chown(dirs[who], uid, uid)
    monkeypatch.setattr(filecell, "LEGACY_ROOT", str(tmp_path))
    monkeypatch.setattr(filecell, "DEFAULT_ROOT", str(tmp_path / "none"))
    said: list[str] = []
    assert leftovers._sweep_filecell_dirs(said.append, dry_run=False) == 1
    assert (dirs["theirs"].is_dir(), dirs["ours"].exists()) == (True, False)
    assert said == [f"removed filecell kernel dir {dirs['ours']} (its runner {gone.pid} is gone)"]
