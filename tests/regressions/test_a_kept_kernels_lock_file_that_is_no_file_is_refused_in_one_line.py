"""Found by a breaker helper (2026-12-06, malformed input): a kept kernel's lock file
(``<kept dir>/<kernel id>.lock``) that is a symlink, a directory or a fifo made ``hermes-kernel
exec`` and ``attach`` end in a traceback (``OSError: [Errno 40] Too many levels of symbolic
links``, ``IsADirectoryError``, ``OSError: [Errno 22] Invalid argument`` from ``ftruncate``).
They now refuse it in one line naming the file, with the kept dir's hint (fix or remove it).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept

KERNEL = "a" * 32


@pytest.fixture(params=["symlink", "directory", "fifo"])
def bad_lock(request: pytest.FixtureRequest, private_tmp: Path) -> str:
    now = time.time()
    record = {"kernel_id": KERNEL, "transport": "local", "locator": {}, "token": "t", "nodeid": "t.py::t",
              "kept_at": now, "detached_at": now, "ttl_s": 3600.0, "host_pid": 1}
    root = kept.kept_dir()
    Path(root, f"{KERNEL}.json").write_text(json.dumps(record), encoding="utf-8")
    lock = os.path.join(root, f"{KERNEL}.lock")
    if request.param == "symlink":
        os.symlink(str(private_tmp / "elsewhere"), lock)
    elif request.param == "directory":
        os.mkdir(lock)
    else:
        os.mkfifo(lock)
    return lock


@pytest.mark.parametrize("argv", [["exec", KERNEL, "1"], ["attach", KERNEL]], ids=["exec", "attach"])
def test_the_command_refuses_it_in_one_line(bad_lock: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(argv)

    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == 1, out + err
    assert err.startswith(f"hermes-kernel {argv[0]}: refusing to use the lock file {bad_lock}: "), err
    assert f"fix or remove {bad_lock}" in err, err
