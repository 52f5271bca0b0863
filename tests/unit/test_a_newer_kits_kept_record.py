"""A kept record a newer kit wrote, with a field this one does not know, is read, listed and left
alone by the sweeps, and keeps that field when this kit writes the record again.

Records gained fields before (``rootdir``, 2026-12-03): 50c2a37 (2026-12-02), meeting this kit's
records, ``hermes-kernel ls`` listed none of them, and its ``sweep --dry-run`` said ``would kill
kernel process 2870 (host 2610 is gone)`` of a kernel this kit kept (its record unreadable there,
the kernel looked like an orphan). This kit skipped such a record the same way: ``ls`` said it is
not a record this version can read, and the process sweep killed the kernel it names.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import psutil

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept
from pytest_hermes_kernel.transports.leftovers import kill_orphan_kernels
from tests.support import environ_of, wait_until


def _newer_record(kernel_id: str) -> Path:
    now = time.time()
    path = Path(kept.save(kept.KeptKernel(
        kernel_id=kernel_id, transport="local", locator={"runner_pid": 1, "kernel_dir": "/nowhere"}, token="t",
        nodeid="test_x.py::test_load[local]", kept_at=now, detached_at=now, ttl_s=3600.0, host_pid=1)))
    data = json.loads(path.read_text())
    data.update({"kit_version": "0.2.0", "ttl_policy": {"kind": "idle"}})  # what a newer kit may add
    path.write_text(json.dumps(data))
    return path


def test_ls_lists_it(private_tmp: Path, capsys) -> None:
    kid = uuid.uuid4().hex
    _newer_record(kid)
    assert main(["ls", "--ids"]) == 0
    out, err = capsys.readouterr()
    assert out.split() == [kid], (out, err)
    assert "not kept-kernel records" not in err, err


def test_the_process_sweep_leaves_its_kernel_alone(private_tmp: Path, monkeypatch) -> None:
    kid = uuid.uuid4().hex
    _newer_record(kid)
    with open("/proc/sys/kernel/pid_max", encoding="ascii") as fh:
        dead = int(fh.read()) + 1
    env = {**os.environ, "HERMES_KERNEL_ID": kid, "HERMES_KERNEL_HOST_PID": str(dead),
           kept.TMPDIR_ENV: str(private_tmp)}
    proc = subprocess.Popen(["sleep", "300"], env=env, start_new_session=True)
    try:
        wait_until(lambda: "HERMES_KERNEL_ID" in environ_of(proc.pid), 5.0, what="the process to have exec'd")
        monkeypatch.setattr(psutil, "process_iter", lambda *args, **kwargs: iter([psutil.Process(proc.pid)]))
        lines: list[str] = []
        assert kill_orphan_kernels(lines.append, False) == 0, lines
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(5)


def test_its_unknown_fields_stay_when_this_kit_writes_it_again(private_tmp: Path) -> None:
    kid = uuid.uuid4().hex
    path = _newer_record(kid)
    kept.save(kept.find(kid).detached_now())  # as exec/attach do when they leave
    data = json.loads(path.read_text())
    assert data["kit_version"] == "0.2.0" and data["ttl_policy"] == {"kind": "idle"}, data
