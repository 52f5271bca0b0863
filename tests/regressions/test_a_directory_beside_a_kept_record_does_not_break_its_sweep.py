"""Found by a breaker helper (2026-12-06, malformed input): a directory named as a file beside a
kept kernel's record (``<kernel id>.lock``, ``<kernel id>.ssh-key``) made ``hermes-kernel sweep
kept`` end in ``IsADirectoryError`` once it had removed the record: the files after it were left,
and the sweep's summary never came. Such a directory is no file of the kit's: it is left alone.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept

KERNEL = "a" * 32


def test_the_sweep_removes_the_record_and_says_so(private_tmp: Path, capsys) -> None:
    now = time.time() - 7200
    record = {"kernel_id": KERNEL, "transport": "local", "locator": {}, "token": "t", "nodeid": "t.py::t",
              "kept_at": now, "detached_at": now, "ttl_s": 60.0, "host_pid": 1}
    root = kept.kept_dir()
    Path(root, f"{KERNEL}.json").write_text(json.dumps(record), encoding="utf-8")
    os.mkdir(os.path.join(root, f"{KERNEL}.lock"))
    Path(root, f"{KERNEL}.ssh-key").write_text("k", encoding="utf-8")

    code = main(["sweep", "kept"])

    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == 0, out + err
    assert "sweep: 1 kept" in out, out
    assert sorted(os.listdir(root)) == [f"{KERNEL}.lock"]
