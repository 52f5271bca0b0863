"""Found by a breaker helper (2026-12-06, malformed input): a fifo named as a kept kernel's record
(``<kept dir>/<id>.json``) or as the secrets file beside one made ``hermes-kernel ls``, ``exec``,
``attach`` and ``sweep --dry-run`` hang for good: ``open`` of a fifo waits for a writer; so did a
sweep's look at a shared container's state file in a run dir ("is it held?"). A symlink to
``/dev/zero`` there was read until memory ran out (not tested here: put back, that test would eat
the machine's memory). Records and state files are now read only when they are regular files of
at most 1 MiB; another is skipped as a damaged record is, and named.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept, sharing
from tests.support import hang_alarm

GOOD = "a" * 32


def _write_good() -> None:
    now = time.time()
    record = {"kernel_id": GOOD, "transport": "local", "locator": {}, "token": "t", "nodeid": "t.py::t",
              "kept_at": now, "detached_at": now, "ttl_s": 3600.0, "host_pid": 1}
    (Path(kept.kept_dir()) / f"{GOOD}.json").write_text(json.dumps(record), encoding="utf-8")


@pytest.fixture(params=["fifo record", "fifo secrets"])
def odd_file(request: pytest.FixtureRequest, private_tmp: Path) -> str:
    _write_good()
    root = kept.kept_dir()
    os.mkfifo(os.path.join(root, f"{'b' * 32}.json" if request.param == "fifo record" else f"{GOOD}.{kept.ENV_SECRETS}"))
    return request.param


@pytest.mark.parametrize("argv", [["ls"], ["sweep", "--kept", "--dry-run"], ["exec", "zzz", "1"]],
                         ids=["ls", "sweep-kept", "exec"])
def test_the_commands_answer(odd_file: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with hang_alarm(20, f"hermes-kernel {' '.join(argv)} beside a {odd_file}"):
        code = main(argv)

    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert code == (2 if argv[0] == "exec" else 0), out + err
    if argv[0] == "ls":
        assert GOOD in out, out
        if odd_file == "fifo record":
            assert f"1 file(s) in {kept.kept_dir()} are not kept-kernel records" in err, err


def test_a_shared_state_file_that_is_a_fifo_holds_nothing(private_tmp: Path) -> None:
    path = str(private_tmp / "docker-x.json")
    os.mkfifo(path)

    with hang_alarm(20, "a sweep's look at a shared state file that is a fifo"):
        assert sharing.held(path) is False
