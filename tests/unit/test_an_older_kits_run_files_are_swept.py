"""The run files a kit before 2026-12-01 (6bd26ba) left flat in the temp dir go with ``sweep run-files``.

Such a kit (e.g. 0dc088b) kept a shared container's files as
``<tmp>/pytest-hermes-kernel-<run id>-<kind>-<key>.json`` and ``.lock``, and the sshd container's
private key as ``...-<container id[:12]>.key``. A run of it that was SIGKILLed left the three
for good: ``hermes-kernel sweep --dry-run run-files`` of a newer kit said ``0 run files`` (it looks
only in the per-user run dirs), and the 0600 private key stayed in the temp dir. A live older run's
files stay (its members are wall-clock start times: see test_an_older_kits_live_run_is_not_swept).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from pytest_hermes_kernel.cli import main

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="start times since boot come from /proc")

STEM = "pytest-hermes-kernel-969df4689028420bb4156ecf19e8557c-sshd-hermes_kernel_host_latest-0"


def _older_run_files(tmp: Path, member: str) -> list[Path]:
    """The files an older kit's sshd sharing left in ``tmp``, with ``member`` in its state."""
    key = tmp / f"{STEM}-d05695b6c9f1.key"
    key.write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    state = {"resource": {"container_id": "d05695b6c9f1" + "0" * 52, "host": "127.0.0.1", "port": 32925,
                          "user": "hermes", "key_file": str(key), "host_key": "ssh-ed25519 AAAA"},
             "members": [member]}
    (tmp / f"{STEM}.json").write_text(json.dumps(state))
    (tmp / f"{STEM}.lock").write_text("")
    lone = tmp / "pytest-hermes-kernel-c9a942be7de548bd9b682d6d90c83cc1-docker-0a1b2c3d4e5f.lock"
    lone.write_text("")
    for path in (key, tmp / f"{STEM}.json", tmp / f"{STEM}.lock", lone):
        path.chmod(0o600)
    return [key, tmp / f"{STEM}.json", tmp / f"{STEM}.lock", lone]


def _sweep(tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str) -> str:
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr("tempfile.tempdir", None)
    assert main(["sweep", *args, "run-files"]) == 0
    return capsys.readouterr().out


def test_a_killed_older_runs_files_and_key_are_swept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    files = _older_run_files(tmp_path, f"{dead.stdout.strip()}:1796528586.200:21e4305e")
    unrelated = [tmp_path / "pytest-hermes-kernel-image.lock", tmp_path / "pytest-hermes-kernel-notes.json"]
    for path in unrelated:
        path.write_text("{}")

    out = _sweep(tmp_path, monkeypatch, capsys, "--dry-run")
    assert "4 run files" in out, out
    assert all(f"would remove run file {path} " in out for path in files), out
    assert all(path.exists() for path in files)

    out = _sweep(tmp_path, monkeypatch, capsys)
    assert "4 run files" in out, out
    assert not [path for path in files if path.exists()]
    assert all(path.exists() for path in unrelated)


def test_a_live_older_runs_files_stay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        files = _older_run_files(tmp_path, f"{proc.pid}:{psutil.Process(proc.pid).create_time():.3f}:21e4305e")
        with open(files[-1], "rb") as held:  # the lone lock, held by a live older run inside it
            fcntl.flock(held, fcntl.LOCK_EX)
            out = _sweep(tmp_path, monkeypatch, capsys)
    finally:
        proc.kill()
        proc.wait()
    assert "0 run files" in out, out
    assert all(path.exists() for path in files)
